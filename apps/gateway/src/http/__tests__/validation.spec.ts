import type { ArgumentMetadata } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsArray, IsIn, IsInt, IsString, Min, ValidateNested } from 'class-validator';
import { AppError } from '@touchpoint/errors';
import { createValidationPipe } from '../validation.js';

class NodeDto {
  @IsString() id!: string;
  @IsInt() @Min(0) x!: number;
}

class GraphDto {
  @IsString() name!: string;
  @IsIn(['a', 'b']) kind!: string;
  @IsArray() @ValidateNested({ each: true }) @Type(() => NodeDto) nodes!: NodeDto[];
}

describe('createValidationPipe', () => {
  const sut = createValidationPipe();
  const body: ArgumentMetadata = { type: 'body', metatype: GraphDto };

  const failureOf = async (value: unknown): Promise<AppError> => {
    try {
      await sut.transform(value, body);
    } catch (err) {
      return err as AppError;
    }
    throw new Error('no validation error');
  };

  it('passes a valid body through as an instance of the DTO', async () => {
    const value = await sut.transform({ name: 'n', kind: 'a', nodes: [{ id: 'x', x: 1 }] }, body);
    expect(value).toBeInstanceOf(GraphDto);
  });

  it.each([
    ['an unknown field', { name: 'n', kind: 'a', nodes: [], extra: 1 }, ['extra']],
    ['a wrong type', { name: 7, kind: 'a', nodes: [] }, ['name']],
    ['a value out of its set', { name: 'n', kind: 'z', nodes: [] }, ['kind']],
    ['two bad fields', { kind: 'z', nodes: [] }, ['name', 'kind']],
    [
      'a nested field, by its path',
      {
        name: 'n',
        kind: 'a',
        nodes: [
          { id: 'x', x: 1 },
          { id: 3, x: -1 },
        ],
      },
      ['nodes.1.id', 'nodes.1.x'],
    ],
    ['an unknown nested field', { name: 'n', kind: 'a', nodes: [{ id: 'x', x: 1, y: 2 }] }, ['nodes.0.y']],
  ])('answers validation_failed naming each field for %s', async (_case, value, fields) => {
    const error = await failureOf(value);
    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe('validation_failed');
    const details = error.details as { field: string; problems: string[] }[];
    expect(details.map((d) => d.field)).toEqual(fields);
    for (const d of details) expect(d.problems.length).toBeGreaterThan(0);
  });
});

import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';
import { API_SCOPES, type ApiScope, MEMBER_ROLES, type MemberRole } from '@touchpoint/contracts';
import type { SessionView } from '../sessions.service.js';

/** Body of `POST /sessions`. */
export class SignInDto {
  @ApiProperty({ description: 'Your personal API key secret (`tp_...`); it is checked, never stored in the browser or the session', example: 'tp_3q2-7wEvKxBdV0c9gYkz4TQmR8uNn1hLpSaXoJf6ZiA', maxLength: 256 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  api_key!: string;
}

/** A console session (`POST /sessions`, `GET /sessions/current`). */
export class SessionDto implements SessionView {
  @ApiProperty({ format: 'uuid', example: '0b6f2c1e-4d3a-4e5b-9c8d-7a6f5e4d3c2b' })
  id!: string;

  @ApiProperty({ format: 'uuid', description: 'The member who signed in: every action of the session is recorded as theirs', example: '3a9c1e5b-7d2f-4b8e-a6c4-1f0e9d8c7b21' })
  member_id!: string;

  @ApiProperty({ format: 'uuid', example: '6f1c2a4e-8b7d-4c3e-9a1f-2d5e8b7c4a10' })
  organization_id!: string;

  @ApiProperty({ enum: MEMBER_ROLES, description: "The member's role right now", example: 'operator' })
  role!: MemberRole;

  @ApiProperty({ enum: API_SCOPES, isArray: true, description: 'The scopes of the key the member signed in with', example: ['outreach:read', 'outreach:write'] })
  scopes!: ApiScope[];

  @ApiProperty({ format: 'date-time', description: 'When the session ends, however it is used (CONSOLE_SESSION_TTL_S after sign-in)', example: '2026-03-02T22:05:00.000Z' })
  expires_at!: string;

  @ApiProperty({ description: 'Send it as the `X-CSRF-Token` header on every POST, PUT, PATCH and DELETE made with the session cookie', example: 'Jx8sQ0w2bV7nR4tY6uI1oP3aS5dF9gH2jK4lZ6xC8vB' })
  csrf_token!: string;
}

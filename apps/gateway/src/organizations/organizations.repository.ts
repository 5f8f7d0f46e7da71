import { Injectable } from '@nestjs/common';
import { DataSource, type Repository } from 'typeorm';
import { OrganizationEntity } from './entities/organization.entity.js';

/** Every statement on `organizations`. Plain CRUD, so TypeORM's repository. */
@Injectable()
export class OrganizationsRepository {
  private readonly rows: Repository<OrganizationEntity>;

  constructor(dataSource: DataSource) {
    this.rows = dataSource.getRepository(OrganizationEntity);
  }

  insert(name: string): Promise<OrganizationEntity> {
    return this.rows.save(this.rows.create({ name }));
  }

  findById(id: string): Promise<OrganizationEntity | null> {
    return this.rows.findOneBy({ id });
  }
}

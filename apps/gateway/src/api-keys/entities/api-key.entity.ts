import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { ApiScope } from '@touchpoint/contracts';

/** An API key (DESIGN §3). Only the SHA-256 of the secret is kept; `secretHint` is its first characters. */
@Entity({ name: 'api_keys' })
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'organization_id', type: 'uuid' })
  organizationId!: string;

  @Column({ name: 'created_by_member_id', type: 'uuid' })
  createdByMemberId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'secret_hash', type: 'bytea', select: false })
  secretHash!: Buffer;

  @Column({ name: 'secret_hint', type: 'text' })
  secretHint!: string;

  @Column({ type: 'text', array: true })
  scopes!: ApiScope[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;

  /** Who, from support, acts as the member through this key; null for the member's own keys. */
  @Column({ name: 'impersonated_by', type: 'text', nullable: true })
  impersonatedBy!: string | null;
}

export * from './data-source.js';
export * from './bus-tables.migration.js';
export * from './transaction.js';
export * from './commit-batch.js';
export * from './keyset-cursor.js';
export * from './sql.js';
export * from './request-errors.js';
export * from './unreachable.js';

export * from './envelope.js';
export * from './services.js';
export * from './platform.js';
export * from './outbox.js';
export * from './gateway.js';
export * from './messaging.js';
export * from './abuse.js';
export * from './ai.js';

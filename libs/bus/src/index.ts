export * from './topology.js';
export * from './decorators.js';
export * from './bus.js';
export * from './relay.js';
export * from './dead-letters.js';
export * from './channel-errors.js';

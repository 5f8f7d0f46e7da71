// Preloaded (`node --import`) into every process `npm start` runs. The children lead their own
// process groups so that the orchestrator alone decides how they stop; the price is that a
// SIGKILLed orchestrator would leave them running and holding their ports. This watches for that:
// once the parent is gone (the child is re-parented), the child sends itself SIGTERM and shuts
// down as it would on Ctrl-C.
const POLL_MS = 1000;
const parent = process.ppid;
const timer = setInterval(() => {
  if (process.ppid !== parent) {
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }
}, POLL_MS);
timer.unref();

/** RPC patterns every service answers (the gateway's readiness view and the bus probe). */
export const PlatformRpc = {
  /** `{}` → `{ service, ok: true }`: answers when the service's RPC server is consuming. */
  Ping: 'platform.ping',
} as const;

/** Bus self-test messages, used by the foundation tests and `bench:bus`. */
export const PlatformEvents = {
  /** A probe event written by one service and handled by another. */
  ProbeRecorded: 'platform.probe.recorded',
} as const;

/** Data of `platform.probe.recorded`: the probe's sequence number, and padding (`bench:bus`) to give the message a size. */
export interface PlatformProbeData {
  seq: number;
  body?: string;
}

import { Injectable } from '@nestjs/common';

/** WhatsApp's customer-service window, ms: 24 hours from the person's last message (Cloud API docs). */
export const SANDBOX_SERVICE_WINDOW_MS = 24 * 3_600_000;

/**
 * The customer-service windows the Meta stand-in knows: when each person last wrote to each
 * business number, from the inbound messages the sandbox itself simulated (`POST /sandbox/meta/inbound`,
 * at the message's `timestamp`). With `service_window` on, Graph refuses anything but a template
 * to a person whose window is closed, with 131047 as Meta does.
 */
@Injectable()
export class MetaServiceWindowService {
  private readonly lastInbound = new Map<string, number>();

  /** Records an inbound message from `waId` to the number at `atMs` (epoch ms); never moves a window back. */
  record(phoneNumberId: string, waId: string, atMs: number): void {
    const key = `${phoneNumberId}:${waId.replace(/\D/g, '')}`;
    this.lastInbound.set(key, Math.max(this.lastInbound.get(key) ?? 0, atMs));
  }

  /** Whether free-form messages to `waId` from the number are allowed at `nowMs`. */
  isOpen(phoneNumberId: string, waId: string, nowMs: number): boolean {
    const at = this.lastInbound.get(`${phoneNumberId}:${waId.replace(/\D/g, '')}`);
    return at !== undefined && nowMs - at < SANDBOX_SERVICE_WINDOW_MS;
  }

  reset(): void {
    this.lastInbound.clear();
  }
}

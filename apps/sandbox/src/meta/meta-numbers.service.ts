import { Injectable } from '@nestjs/common';

/** A business phone number the Meta stand-in knows, and the system-user tokens that may use it. */
export interface SandboxPhoneNumber {
  id: string;
  display_phone_number: string;
  verified_name: string;
  /** Tokens with access to the number (a business may have several system users). */
  access_tokens: string[];
}

/**
 * The business numbers of the Meta stand-in, as a WhatsApp Business Account holds them: each id
 * is readable only with one of its own tokens (`GET /{version}/{phone_number_id}`), so a sender
 * can prove it owns a number. Numbers are made known through `POST /sandbox/meta/numbers`; adding
 * a known number again adds its token.
 */
@Injectable()
export class MetaNumbersService {
  private readonly numbers = new Map<string, SandboxPhoneNumber>();
  /** Tokens that expired or were revoked: Graph answers 190 to them, on reads and sends alike. */
  private readonly expired = new Set<string>();

  /** Makes `token` expired (Meta's 190, subcode 463) until the sandbox is reset. */
  expire(token: string): void {
    this.expired.add(token);
  }

  isExpired(token: string): boolean {
    return this.expired.has(token);
  }

  add(number: { id: string; access_token: string; display_phone_number: string; verified_name: string }): SandboxPhoneNumber {
    const known = this.numbers.get(number.id);
    const tokens = new Set([...(known?.access_tokens ?? []), number.access_token]);
    const next: SandboxPhoneNumber = { id: number.id, display_phone_number: number.display_phone_number, verified_name: number.verified_name, access_tokens: [...tokens] };
    this.numbers.set(number.id, next);
    return next;
  }

  /** The number when `token` may read it; undefined for an unknown id or another business's token. */
  readable(id: string, token: string): SandboxPhoneNumber | undefined {
    const number = this.numbers.get(id);
    return number?.access_tokens.includes(token) ? number : undefined;
  }

  /** Whether any number is reachable with `token` (Graph tells a bad token from a missing permission). */
  knowsToken(token: string): boolean {
    for (const number of this.numbers.values()) if (number.access_tokens.includes(token)) return true;
    return false;
  }

  reset(): void {
    this.numbers.clear();
    this.expired.clear();
  }
}

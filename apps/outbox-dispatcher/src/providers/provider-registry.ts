import { Inject, Injectable } from '@nestjs/common';
import type { OutboxChannel } from '@touchpoint/contracts';
import { PROVIDER_ADAPTERS, type ProviderAdapter } from './provider-adapter.js';

/** The adapters by channel. */
@Injectable()
export class ProviderRegistry {
  private readonly byChannel: Map<OutboxChannel, ProviderAdapter>;

  constructor(@Inject(PROVIDER_ADAPTERS) adapters: ProviderAdapter[]) {
    this.byChannel = new Map(adapters.map((a) => [a.channel, a]));
  }

  /** The adapter of a channel, or undefined when the channel has none yet. */
  get(channel: OutboxChannel): ProviderAdapter | undefined {
    return this.byChannel.get(channel);
  }
}

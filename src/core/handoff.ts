// Hands freshly enqueued firings to the nodes that own them, without waiting for their next
// poll: the owner is poked (locally, or by an internal HTTP call) and claims its firings at
// once. A lost poke costs only latency: every node also polls the store each second.

import type { Logger } from "./log.ts";

export type PeerPoke = (address: string) => Promise<void>;

export class Handoff {
  constructor(
    private readonly selfId: string,
    private readonly addressOf: (nodeId: string) => string | null,
    private readonly pokeLocal: () => void,
    private readonly pokePeer: PeerPoke,
    private readonly log: Logger,
  ) {}

  notify(firings: { owner: string | null }[]): void {
    const owners = new Set(firings.map((f) => f.owner ?? this.selfId));
    for (const owner of owners) {
      if (owner === this.selfId) {
        this.pokeLocal();
        continue;
      }
      const address = this.addressOf(owner);
      if (!address) continue;
      this.pokePeer(address).catch((err: unknown) => this.log.debug("poking a peer failed; it will poll", { owner, err: String(err) }));
    }
  }
}

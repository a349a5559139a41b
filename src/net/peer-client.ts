// Calls between nodes: a poke tells a peer that firings it owns were just enqueued.

import type { PeerPoke } from "../core/handoff.ts";

export function peerPoker(token: string | null, timeoutMs = 1_000): PeerPoke {
  return async (address: string) => {
    const res = await fetch(`${address}/internal/v1/poke`, {
      method: "POST",
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`poke answered ${res.status}`);
  };
}

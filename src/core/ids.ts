// Identifiers the server makes: time-ordered firing ids (index-friendly), random job and node ids.

import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower case

function base32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** 48-bit ms timestamp then 80 random bits, like a ULID: sorts by creation time. */
export function newFiringId(nowMs: number): string {
  const b = new Uint8Array(16);
  let t = nowMs;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b.set(randomBytes(10), 6);
  return `f_${base32(b)}`;
}

export function newJobId(): string {
  return `j_${base32(randomBytes(10))}`;
}

export function newNodeId(): string {
  return `n_${base32(randomBytes(5))}`;
}

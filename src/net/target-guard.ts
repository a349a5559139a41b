// SPEC: targets on loopback and private networks are allowed (cronwheel is self-hosted), but
// link-local and cloud-metadata addresses are refused: a job must not be able to read instance
// credentials. Checked on the addresses the host name resolves to, right before each request.

import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { RefusedTargetError } from "../core/webhook.ts";

const METADATA_V4 = new Set(["100.100.100.200"]); // Alibaba Cloud; the others sit in 169.254/16
const METADATA_V6 = new Set(["fd00:ec2::254"]); // AWS over IPv6

function v4Refused(ip: string): boolean {
  return ip.startsWith("169.254.") || METADATA_V4.has(ip);
}

function v6Refused(ip: string): boolean {
  const lower = ip.toLowerCase();
  if (METADATA_V6.has(lower)) return true;
  if (/^fe[89ab][0-9a-f]?:/.test(lower)) return true; // fe80::/10
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  return mapped !== null && v4Refused(mapped[1]!);
}

/** Why this literal address is refused, or null. */
export function refusedAddress(ip: string): string | null {
  const family = isIP(ip);
  if (family === 4 && v4Refused(ip)) return `${ip} is a link-local or cloud-metadata address`;
  if (family === 6 && v6Refused(ip)) return `${ip} is a link-local or cloud-metadata address`;
  return null;
}

/** Throws RefusedTargetError when the URL's host is, or resolves to, a refused address. */
export async function checkTarget(url: string): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (host.toLowerCase() === "metadata.google.internal") throw new RefusedTargetError(`${host} is a cloud-metadata host`);
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  for (const a of addresses) {
    const why = refusedAddress(a);
    if (why) throw new RefusedTargetError(`target refused: ${why}`);
  }
}

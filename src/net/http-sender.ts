// Puts webhook requests on the wire with fetch. Redirects are not followed (a 3xx is an
// answer, judged like any non-2xx), and the response body is drained only up to a cap so a
// huge or endless body cannot hold memory or the connection.

import type { WebhookRequest, WebhookResponse, WebhookSender } from "../core/webhook.ts";
import { checkTarget } from "./target-guard.ts";

const MAX_RESPONSE_BYTES = 64 * 1024;

async function drain(body: ReadableStream<Uint8Array> | null): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  let read = 0;
  try {
    while (read < MAX_RESPONSE_BYTES) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

export const httpSender: WebhookSender = async (req: WebhookRequest, signal: AbortSignal): Promise<WebhookResponse> => {
  await checkTarget(req.url);
  const res = await fetch(req.url, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    redirect: "manual",
    signal,
  });
  await drain(res.body);
  return { status: res.status, retryAfter: res.headers.get("retry-after") };
};

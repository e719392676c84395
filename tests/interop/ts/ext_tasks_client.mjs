#!/usr/bin/env node
// A client peer built on @modelcontextprotocol/ext-tasks (the generation-agnostic Tasks requester)
// over @modelcontextprotocol/client 2.x.  It calls one tool against a server given as a streamable
// HTTP URL or a stdio command, in a chosen dialect, and prints ONE JSON object on stdout.
//
// Dialects:
//   --dialect 2025-11-25   the client's `initialize` handshake (the SDK names that negotiation mode
//                          "legacy"); ext-tasks drives the 2025-11-25 task wire itself through the
//                          SDK Client's public request path.
//   --dialect 2026-07-28   `versionNegotiation: {mode: {pin: "2026-07-28"}}` (server/discover); the
//                          SDK's modern codec rejects task traffic, so ext-tasks needs `rawDispatch`
//                          (a host-owned request coordinator) and `v2RequestFraming` (the per-request
//                          _meta values).  The coordinator below sends raw JSON-RPC on the SAME
//                          transport with its own request ids and takes their responses off the wire
//                          before the SDK sees them.
//   --dialect auto         `versionNegotiation: {mode: "auto"}`; raw dispatch is wired in case the
//                          connection turns out modern.
//
// Usage:
//   node ext_tasks_client.mjs [--dialect D] [--tool NAME] [--args JSON] [--preference allow|prefer|require|forbid]
//                             [--ttl-ms N] [--cancel on-create|on-status] [--answer JSON] [--timeout-ms N]
//                             (--url URL | -- COMMAND ARGS...)
//
// Report keys: peer, packages, dialect_requested, protocol_version, era, dialect (the task dialect in
// use: "2025-11-25", "2026-07-28" or null), server_info, task_capabilities (ext-tasks' view), tools
// ({name: taskSupport|null}), kind ("task" | "immediate"), task_id, statuses (distinct {status,
// message} from the execution's events, in order), outcome ({status, result?, error?}), cancel
// ({requested, acknowledged, error, server_status}), input ({supported, requests: [...]}),
// background_errors, wire, elapsed_s, crashed.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

import {
  StatusLog,
  UsageError,
  WireLog,
  deadline,
  errorJson,
  finish,
  packageVersions,
  parseCommandLine,
  tapTransport,
} from "./_common.mjs";

const MODERN = "2026-07-28";
const DIALECT_2025 = "2025-11-25";
const CLIENT_INFO = { name: "ts-ext-tasks-client", version: "1.0.0" };
const started = performance.now();

const report = {
  peer: "ext_tasks_client",
  packages: packageVersions(["@modelcontextprotocol/ext-tasks", "@modelcontextprotocol/client"]),
  dialect_requested: null,
  protocol_version: null,
  era: null,
  dialect: null,
  server_info: null,
  task_capabilities: null,
  tools: {},
  kind: null,
  task_id: null,
  statuses: [],
  outcome: null,
  cancel: { requested: null, acknowledged: false, error: null, server_status: null },
  // ext-tasks routes input requests (2025-11-25: server->client elicitation/sampling/roots tagged
  // with related-task; 2026-07-28: tasks/get inputRequests answered with tasks/update) to the
  // session's onInputRequest handler, which this peer always installs.
  input: { supported: true, requests: [] },
  background_errors: [],
  wire: [],
  elapsed_s: null,
  crashed: null,
};

/**
 * The host-owned request coordinator ext-tasks asks for on 2026-07-28 connections: it owns request
 * ids and response matching for the raw task traffic the SDK Client will not carry.
 */
class RawCoordinator {
  constructor() {
    this.pending = new Map();
    this.nextId = 1;
    this.send = undefined;
  }

  /** Called for every incoming message; true when it answered one of our raw requests. */
  intercept(message) {
    if (message.id === undefined || message.method !== undefined) return false;
    const waiter = this.pending.get(message.id);
    if (waiter === undefined) return false;
    this.pending.delete(message.id);
    waiter(message);
    return true;
  }

  dispatch = async (request, options = {}) => {
    if (this.send === undefined) throw new Error("raw dispatch used before the transport was connected");
    const id = `ext-tasks-raw-${this.nextId++}`;
    const timeoutMs = options.context?.requestTimeoutMs ?? 60_000;
    const response = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`raw ${request.method} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = () => {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(options.signal.reason ?? new DOMException("aborted", "AbortError"));
      };
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, (message) => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        resolve(message);
      });
      this.send({ jsonrpc: "2.0", id, ...request }).catch((error) => {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(error);
      });
    });
    if (response.error !== undefined) return { kind: "error", error: response.error };
    return { kind: "result", result: response.result };
  };
}

class InPlaceStdioClientTransport extends StdioClientTransport {}

let parsed;
try {
  parsed = parseCommandLine({
    dialect: { type: "string", default: MODERN },
    preference: { type: "string", default: "prefer" },
    "ttl-ms": { type: "string" },
    cancel: { type: "string" },
    answer: { type: "string", default: '{"action":"accept","content":{"answer":"yes"}}' },
  });
  if (![MODERN, DIALECT_2025, "auto"].includes(parsed.options.dialect)) {
    throw new UsageError(`--dialect is ${MODERN}, ${DIALECT_2025} or auto`);
  }
  if (!["allow", "prefer", "require", "forbid"].includes(parsed.options.preference)) {
    throw new UsageError("--preference is allow, prefer, require or forbid");
  }
  if (![undefined, "on-create", "on-status"].includes(parsed.options.cancel)) {
    throw new UsageError("--cancel is on-create or on-status");
  }
  parsed.answer = JSON.parse(parsed.options.answer);
} catch (error) {
  report.crashed = errorJson(error);
  finish(report, 2);
}

if (parsed !== undefined) {
  const { options, command } = parsed;
  report.dialect_requested = options.dialect;
  report.cancel.requested = options.cancel ?? null;
  const wire = new WireLog();
  const coordinator = new RawCoordinator();
  // In pin mode the SDK probes server/discover on a short-lived sibling process when given the base
  // StdioClientTransport, and "in place" for a subclass; in place keeps one server process per run
  // (and the probe visible in the wire log).  There is no fallback in pin mode, so nothing else changes.
  const StdioTransport = options.dialect === MODERN ? InPlaceStdioClientTransport : StdioClientTransport;
  const transport =
    options.url !== undefined
      ? new StreamableHTTPClientTransport(new URL(options.url))
      : new StdioTransport({ command: command[0], args: command.slice(1), env: { ...process.env } });
  tapTransport(transport, {
    record: (direction, message) => wire.record(direction, message),
    intercept: (message) => coordinator.intercept(message),
  });
  // Raw requests go through the tapped `send`, so they appear in the wire log too.
  coordinator.send = (message) => transport.send(message);

  const versionNegotiation =
    options.dialect === MODERN
      ? { mode: { pin: MODERN } }
      : options.dialect === "auto"
        ? { mode: "auto" }
        : { mode: "legacy" }; // the SDK's name for the initialize handshake
  const client = new Client(CLIENT_INFO, { capabilities: { elicitation: {} }, versionNegotiation });
  const limit = deadline(parsed.timeoutMs, `${options.tool} via ext_tasks_client`);
  let session;
  try {
    await Promise.race([
      (async () => {
        await client.connect(transport);
        session = openSession(client, coordinator, parsed);
        await run(client, session, parsed);
      })(),
      limit.promise,
    ]);
  } catch (error) {
    report.crashed = errorJson(error);
  } finally {
    limit.cancel();
    report.wire = wire.entries;
    report.elapsed_s = Number(((performance.now() - started) / 1000).toFixed(3));
    const settleClose = (promise) => Promise.race([promise.catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    if (session !== undefined) await settleClose(session.close());
    await settleClose(client.close());
    finish(report, report.crashed === null ? 0 : 1);
  }
}

function openSession(client, coordinator, { options, answer }) {
  report.protocol_version = client.getNegotiatedProtocolVersion() ?? null;
  report.era = client.getProtocolEra() ?? null;
  report.server_info = client.getServerVersion() ?? null;
  const modern = report.era === "modern";
  const session = createTaskSessionFromClient(client, {
    endpointId: options.url ?? "stdio-peer",
    ...(modern
      ? {
          rawDispatch: coordinator.dispatch,
          v2RequestFraming: {
            protocolVersion: report.protocol_version,
            clientInfo: CLIENT_INFO,
            clientCapabilities: { elicitation: {} },
          },
        }
      : {}),
    onInputRequest: async (request, context) => {
      report.input.requests.push({
        kind: request.kind,
        params: request.params ?? null,
        delivery: context.delivery,
        task_id: context.taskId ?? null,
        input_id: context.inputId ?? null,
      });
      if (request.kind === "elicitation") return answer;
      if (request.kind === "roots") return { roots: [] };
      return { model: "interop-peer", role: "assistant", content: { type: "text", text: "peer answer" } };
    },
    onError: (error) => report.background_errors.push(errorJson(error)),
  });
  report.task_capabilities = session.capabilities;
  const capabilities = client.getServerCapabilities() ?? {};
  if (modern && capabilities.extensions?.["io.modelcontextprotocol/tasks"] !== undefined) report.dialect = MODERN;
  else if (!modern && capabilities.tasks !== undefined) report.dialect = DIALECT_2025;
  return session;
}

async function run(client, session, { options, toolArgs }) {
  const listed = await client.listTools();
  for (const tool of listed.tools) report.tools[tool.name] = tool.execution?.taskSupport ?? null;

  const statuses = new StatusLog();
  let cancelling;
  let execution;
  const cancel = () => {
    cancelling ??= execution.cancel().then(
      () => {
        report.cancel.acknowledged = true;
      },
      (error) => {
        report.cancel.error = errorJson(error);
      },
    );
  };
  execution = await session.callTool(options.tool, toolArgs, {
    task: {
      preference: options.preference,
      ...(options["ttl-ms"] === undefined ? {} : { retentionMs: Number(options["ttl-ms"]) }),
    },
  });
  report.kind = execution.kind;
  report.task_id = execution.kind === "task" ? execution.handle.taskId : null;
  if (execution.kind === "task" && options.cancel === "on-create") cancel();
  const { outcome } = await execution.settle({
    onEvent: (event) => {
      if (event.type !== "task") return;
      statuses.add(event.task.status, event.task.statusMessage);
      if (options.cancel === "on-status" && event.task.statusMessage !== undefined) cancel();
    },
  });
  await cancelling;
  report.statuses = statuses.statuses;
  report.outcome = outcomeJson(outcome);
  if (report.cancel.acknowledged) report.cancel.server_status = await serverStatusAfterCancel(session);
}

function outcomeJson(outcome) {
  if (outcome.status === "completed") return { status: "completed", result: outcome.result };
  if (outcome.status === "failed") return { status: "failed", error: errorJson(outcome.error) };
  return { status: outcome.status };
}

/** Cancellation is cooperative on 2026-07-28: read the task until it settles (bounded). */
async function serverStatusAfterCancel(session) {
  const controller = session.task(report.task_id);
  let snapshot;
  for (let attempt = 0; attempt < 30; attempt += 1) {
    try {
      snapshot = await controller.snapshot();
    } catch (error) {
      return { error: errorJson(error) };
    }
    if (["completed", "failed", "cancelled"].includes(snapshot.status)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return snapshot?.status ?? null;
}

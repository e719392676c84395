// Shared plumbing for the client peers: command-line parsing, a wire tap on the SDK transport,
// package versions, and the one-JSON-object report on stdout.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const HERE = dirname(fileURLToPath(import.meta.url));

/** Exact installed versions of the npm packages a peer uses (read from node_modules). */
export function packageVersions(names) {
  const versions = {};
  for (const name of names) {
    try {
      const manifest = JSON.parse(readFileSync(join(HERE, "node_modules", ...name.split("/"), "package.json"), "utf8"));
      versions[name] = manifest.version;
    } catch {
      versions[name] = null;
    }
  }
  return versions;
}

/**
 * Parses `[options] (--url URL | -- COMMAND ARGS...)`.  Everything after `--` is the stdio server command.
 */
export function parseCommandLine(optionSpec) {
  const argv = process.argv.slice(2);
  const split = argv.indexOf("--");
  const own = split === -1 ? argv : argv.slice(0, split);
  const command = split === -1 ? [] : argv.slice(split + 1);
  const { values } = parseArgs({
    args: own,
    options: {
      url: { type: "string" },
      tool: { type: "string", default: "slow_echo" },
      args: { type: "string", default: "{}" },
      "timeout-ms": { type: "string", default: "20000" },
      ...optionSpec,
    },
    strict: true,
  });
  if ((values.url === undefined) === (command.length === 0)) {
    throw new UsageError("give exactly one server: --url URL or -- COMMAND ARGS...");
  }
  let toolArgs;
  try {
    toolArgs = JSON.parse(values.args);
  } catch (error) {
    throw new UsageError(`--args is not JSON: ${error.message}`);
  }
  return { options: values, command, toolArgs, timeoutMs: Number(values["timeout-ms"]) };
}

export class UsageError extends Error {}

/**
 * Taps a transport instance: records every JSON-RPC message in both directions and lets a hook
 * swallow incoming messages (used to route raw-dispatched responses).  Works by wrapping the
 * instance's `send` and intercepting assignments to `onmessage`, so the SDK keeps using its own
 * transport class unchanged.
 */
export function tapTransport(transport, { record, intercept = () => false }) {
  const originalSend = transport.send.bind(transport);
  transport.send = async (message, options) => {
    record("out", message);
    return originalSend(message, options);
  };
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    enumerable: true,
    get() {
      return handler === undefined
        ? undefined
        : (message, extra) => {
            record("in", message);
            if (intercept(message)) return;
            handler(message, extra);
          };
    },
    set(value) {
      handler = value;
    },
  });
  return { send: originalSend };
}

/** A compact wire log: one entry per message, enough to assert what was exchanged. */
export class WireLog {
  constructor() {
    this.entries = [];
  }
  record(direction, message) {
    const entry = { dir: direction };
    if (message.method !== undefined) entry.method = message.method;
    if (message.id !== undefined) entry.id = message.id;
    if (message.error !== undefined) entry.error = { code: message.error.code, message: message.error.message };
    if (message.result !== undefined && typeof message.result === "object" && message.result !== null) {
      const result = message.result;
      if (result.resultType !== undefined) entry.resultType = result.resultType;
      if (result.task !== undefined) entry.nestedTask = true;
      if (result.status !== undefined) entry.status = result.status;
    }
    if (message.method === "notifications/tasks/status" || message.method === "notifications/tasks") {
      entry.status = message.params?.status;
    }
    this.entries.push(entry);
  }
}

/** Records distinct consecutive (status, message) pairs in the order seen. */
export class StatusLog {
  constructor() {
    this.statuses = [];
  }
  add(status, message) {
    const last = this.statuses.at(-1);
    const entry = { status, message: message ?? null };
    if (last === undefined || last.status !== entry.status || last.message !== entry.message) {
      this.statuses.push(entry);
      return true;
    }
    return false;
  }
}

export function errorJson(error) {
  if (error === undefined || error === null) return null;
  const out = { name: error.name ?? error.constructor?.name ?? "Error", message: String(error.message ?? error) };
  if (typeof error.code === "number") out.code = error.code;
  if (error.data !== undefined) out.data = error.data;
  if (error.cause !== undefined) out.cause = errorJson(error.cause);
  return out;
}

/** Rejects after `ms` with a labelled error, so a wedged peer still prints its report. */
export function deadline(ms, label) {
  let timer;
  const promise = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${label}`)), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** Prints the report as the only stdout line and exits (exit 2: usage error, 1: peer crashed). */
export function finish(report, exitCode = 0) {
  process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(exitCode));
}

#!/usr/bin/env node
// A client peer WITHOUT tasks: the official TypeScript SDK's Client (1.x: @modelcontextprotocol/sdk,
// or 2.x: @modelcontextprotocol/client) calling tools plainly, as most hosts do, against a server
// with the plain hand-off on (docs/any-host.md). It follows a handed-off call through the task
// tools a program would use (it reads structuredContent.taskId) and prints ONE JSON object on stdout.
//
// Usage:
//   node plain_client.mjs [--sdk 1|2] [--negotiation legacy|modern] [--long TOOL]
//                         [--result-args JSON --mark FILE --release FILE] [--cancel-args JSON]
//                         [--ask-args JSON --answer JSON] [--timeout-ms N] (--url URL | -- COMMAND ARGS...)
//
// Scenarios (each runs when its arguments are given; they run at once, on one connection):
//   result  call --long with --result-args; at the hand-off note what FILE --mark holds, create
//           --release, then call task_result until the task is no longer running;
//   cancel  call --long with --cancel-args; at the hand-off call task_cancel, then task_status;
//   answer  call ask with --ask-args; task_result until it shows the question; task_answer with
//           --answer; task_result until the task is no longer running.
//
// Report keys: peer, packages, sdk, protocol_version, tools (names), result / cancel / answer
// ({handoff, handoff_s, marks_at_handoff, steps: [{tool, arguments, result}], final}), crashed.

import { readFileSync, writeFileSync } from "node:fs";

import { UsageError, deadline, errorJson, finish, packageVersions, parseCommandLine } from "./_common.mjs";

const report = {
  peer: "plain_client",
  packages: {},
  sdk: null,
  protocol_version: null,
  tools: [],
  result: null,
  cancel: null,
  answer: null,
  crashed: null,
};

const MAX_FOLLOW = 30; // task_result calls per scenario; each waits up to the server's deadline

let parsed;
try {
  parsed = parseCommandLine({
    sdk: { type: "string", default: "1" },
    negotiation: { type: "string", default: "legacy" },
    long: { type: "string", default: "held" },
    "result-args": { type: "string" },
    mark: { type: "string" },
    release: { type: "string" },
    "cancel-args": { type: "string" },
    "ask-args": { type: "string" },
    answer: { type: "string", default: '{"answer":"Ada"}' },
  });
  if (!["1", "2"].includes(parsed.options.sdk)) throw new UsageError("--sdk is 1 or 2");
  if (!["legacy", "modern"].includes(parsed.options.negotiation)) {
    throw new UsageError("--negotiation is legacy or modern");
  }
} catch (error) {
  report.crashed = errorJson(error);
  finish(report, 2);
}

/** The SDK's Client and transports, 1.x or 2.x (no tasks API used in either). */
async function connect({ options, command }) {
  const info = { name: "mcp-tasks-compat-plain-peer", version: "0.0.0" };
  if (options.sdk === "1") {
    report.packages = packageVersions(["@modelcontextprotocol/sdk"]);
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const transport =
      options.url !== undefined
        ? new StreamableHTTPClientTransport(new URL(options.url))
        : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env } });
    const client = new Client(info, { capabilities: {} });
    await client.connect(transport);
    return client;
  }
  report.packages = packageVersions(["@modelcontextprotocol/client"]);
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const transport =
    options.url !== undefined
      ? new StreamableHTTPClientTransport(new URL(options.url))
      : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env } });
  const versionNegotiation = options.negotiation === "modern" ? { mode: { pin: "2026-07-28" } } : { mode: "legacy" };
  const client = new Client(info, { capabilities: {}, versionNegotiation });
  await client.connect(transport);
  return client;
}

function marksIn(file) {
  try {
    return readFileSync(file, "utf8").split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/** A plain tools/call; the result as the SDK gave it (content, structuredContent, isError). */
async function call(client, steps, tool, args) {
  const result = await client.callTool({ name: tool, arguments: args });
  steps.push({ tool, arguments: args, result });
  return result;
}

const stillRunning = (result, taskId) =>
  result.structuredContent?.taskId === taskId && result.structuredContent?.status === "working";

async function follow(client, steps, taskId, until = (result) => !stillRunning(result, taskId)) {
  for (let i = 0; i < MAX_FOLLOW; i += 1) {
    const result = await call(client, steps, "task_result", { task_id: taskId });
    if (until(result)) return result;
  }
  throw new Error(`task ${taskId} still running after ${MAX_FOLLOW} task_result calls`);
}

async function handOff(client, scenario, tool, args, mark) {
  const started = performance.now();
  const first = await call(client, scenario.steps, tool, args);
  scenario.handoff_s = Number(((performance.now() - started) / 1000).toFixed(3));
  scenario.marks_at_handoff = mark === undefined ? null : marksIn(mark);
  scenario.handoff = first;
  const taskId = first.structuredContent?.taskId;
  if (typeof taskId !== "string") throw new Error(`${tool} did not hand off: ${JSON.stringify(first)}`);
  return taskId;
}

async function run(client, { options }) {
  report.protocol_version = client.getNegotiatedProtocolVersion?.() ?? client.transport?.protocolVersion ?? null;
  report.tools = (await client.listTools()).tools.map((tool) => tool.name);

  // The scenarios run at once on the one connection (each waits for the server's deadline).
  const scenarios = [];
  if (options["result-args"] !== undefined) scenarios.push(resultScenario(client, options));
  if (options["cancel-args"] !== undefined) scenarios.push(cancelScenario(client, options));
  if (options["ask-args"] !== undefined) scenarios.push(answerScenario(client, options));
  await Promise.all(scenarios);
}

async function resultScenario(client, options) {
  const scenario = (report.result = { steps: [] });
  const taskId = await handOff(client, scenario, options.long, JSON.parse(options["result-args"]), options.mark);
  if (options.release !== undefined) writeFileSync(options.release, "go\n");
  scenario.final = await follow(client, scenario.steps, taskId);
}

async function cancelScenario(client, options) {
  const scenario = (report.cancel = { steps: [] });
  const taskId = await handOff(client, scenario, options.long, JSON.parse(options["cancel-args"]));
  scenario.cancelled = await call(client, scenario.steps, "task_cancel", { task_id: taskId });
  scenario.final = await call(client, scenario.steps, "task_status", { task_id: taskId });
}

async function answerScenario(client, options) {
  const scenario = (report.answer = { steps: [] });
  const taskId = await handOff(client, scenario, "ask", JSON.parse(options["ask-args"]));
  scenario.question = await follow(
    client,
    scenario.steps,
    taskId,
    (result) => result.structuredContent?.inputRequests !== undefined || !stillRunning(result, taskId),
  );
  scenario.answered = await call(client, scenario.steps, "task_answer", {
    task_id: taskId,
    answer: JSON.parse(options.answer),
  });
  scenario.final = await follow(client, scenario.steps, taskId);
}

if (parsed !== undefined) {
  report.sdk = parsed.options.sdk;
  const limit = deadline(parsed.timeoutMs, "plain_client scenarios");
  let client;
  try {
    await Promise.race([
      (async () => {
        client = await connect(parsed);
        await run(client, parsed);
      })(),
      limit.promise,
    ]);
  } catch (error) {
    report.crashed = errorJson(error);
  } finally {
    limit.cancel();
    if (client !== undefined) {
      await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    }
    finish(report, report.crashed === null ? 0 : 1);
  }
}

#!/usr/bin/env node
// A client peer built on the official TypeScript SDK 1.x (@modelcontextprotocol/sdk) and its
// experimental tasks API (`client.experimental.tasks`, 2025-11-25 dialect).  It calls one tool,
// as a task or plainly, against a server given as a streamable HTTP URL or a stdio command, and
// prints ONE JSON object on stdout describing what happened.
//
// Usage:
//   node sdk1_client.mjs [--tool NAME] [--args JSON] [--mode task|plain] [--ttl-ms N]
//                        [--cancel on-create|on-status] [--answer JSON] [--timeout-ms N]
//                        (--url URL | -- COMMAND ARGS...)
//
// Report keys: peer, packages, protocol_version, server_info, server_capabilities, tools
// ({name: taskSupport}), mode, task_id, created (the CreateTaskResult's task), statuses (distinct
// {status, message} seen by polling, in order), notified (statuses from notifications/tasks/status),
// result (CallToolResult), error ({code, message} of a JSON-RPC or stream error), cancel
// ({requested, response, error}), input_requests (elicitations answered with --answer), final_task (tasks/get after the end, when a task exists),
// wire (compact message log), elapsed_s, crashed (unexpected exception, else null).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  TaskStatusNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

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

const started = performance.now();
const report = {
  peer: "sdk1_client",
  packages: packageVersions(["@modelcontextprotocol/sdk"]),
  protocol_version: null,
  server_info: null,
  server_capabilities: null,
  tools: {},
  mode: null,
  task_id: null,
  created: null,
  statuses: [],
  notified: [],
  result: null,
  error: null,
  cancel: { requested: null, response: null, error: null },
  input_requests: [],
  final_task: null,
  wire: [],
  elapsed_s: null,
  crashed: null,
};

let parsed;
try {
  parsed = parseCommandLine({
    mode: { type: "string", default: "task" },
    "ttl-ms": { type: "string", default: "60000" },
    cancel: { type: "string" },
    answer: { type: "string", default: '{"action":"accept","content":{"answer":"yes"}}' },
  });
  parsed.answer = JSON.parse(parsed.options.answer);
  if (!["task", "plain"].includes(parsed.options.mode)) throw new UsageError("--mode is task or plain");
  if (![undefined, "on-create", "on-status"].includes(parsed.options.cancel)) {
    throw new UsageError("--cancel is on-create or on-status");
  }
} catch (error) {
  report.crashed = errorJson(error);
  finish(report, 2);
}

const { options, command, toolArgs, timeoutMs } = parsed ?? {};
if (parsed !== undefined) {
  report.mode = options.mode;
  report.cancel.requested = options.cancel ?? null;
  const wire = new WireLog();
  let initializeId;
  const transport =
    options.url !== undefined
      ? new StreamableHTTPClientTransport(new URL(options.url))
      : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env } });
  tapTransport(transport, {
    record(direction, message) {
      wire.record(direction, message);
      if (direction === "out" && message.method === "initialize") initializeId = message.id;
      if (direction === "in" && message.id === initializeId && message.result !== undefined) {
        report.protocol_version = message.result.protocolVersion ?? null;
      }
    },
  });
  const client = new Client(
    { name: "ts-sdk1-task-client", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  // Input requests (2025-11-25: server->client requests inside a task, delivered on tasks/result).
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    report.input_requests.push({ method: request.method, params: request.params });
    return parsed.answer;
  });
  const notified = new StatusLog();
  client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
    notified.add(notification.params.status, notification.params.statusMessage);
  });
  const limit = deadline(timeoutMs, `${options.tool} via sdk1_client`);
  try {
    await Promise.race([run(client, transport), limit.promise]);
  } catch (error) {
    report.crashed = errorJson(error);
  } finally {
    limit.cancel();
    report.notified = notified.statuses;
    report.wire = wire.entries;
    report.elapsed_s = Number(((performance.now() - started) / 1000).toFixed(3));
    await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    finish(report, report.crashed === null ? 0 : 1);
  }
}

async function run(client, transport) {
  await client.connect(transport);
  report.server_info = client.getServerVersion() ?? null;
  report.server_capabilities = client.getServerCapabilities() ?? null;
  const listed = await client.listTools();
  for (const tool of listed.tools) report.tools[tool.name] = tool.execution?.taskSupport ?? null;

  if (options.mode === "plain") {
    try {
      report.result = await client.callTool({ name: options.tool, arguments: toolArgs });
    } catch (error) {
      report.error = errorJson(error);
    }
    return;
  }

  const statuses = new StatusLog();
  const tasks = client.experimental.tasks;
  let cancelling;
  const cancel = (taskId) => {
    cancelling ??= tasks.cancelTask(taskId).then(
      (response) => {
        report.cancel.response = response;
      },
      (error) => {
        report.cancel.error = errorJson(error);
      },
    );
  };
  const stream = tasks.callToolStream({ name: options.tool, arguments: toolArgs }, CallToolResultSchema, {
    task: { ttl: Number(options["ttl-ms"]) },
  });
  for await (const message of stream) {
    if (message.type === "taskCreated") {
      report.task_id = message.task.taskId;
      report.created = message.task;
      statuses.add(message.task.status, message.task.statusMessage);
      if (options.cancel === "on-create") cancel(message.task.taskId);
    } else if (message.type === "taskStatus") {
      statuses.add(message.task.status, message.task.statusMessage);
      if (options.cancel === "on-status" && message.task.statusMessage !== undefined) cancel(report.task_id);
    } else if (message.type === "result") {
      report.result = message.result;
    } else if (message.type === "error") {
      report.error = errorJson(message.error);
    }
  }
  await cancelling;
  report.statuses = statuses.statuses;
  if (report.task_id !== null) {
    try {
      report.final_task = await tasks.getTask(report.task_id);
    } catch (error) {
      report.final_task = { error: errorJson(error) };
    }
  }
}

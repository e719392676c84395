#!/usr/bin/env node
// A task-serving MCP server built on the official TypeScript SDK 1.x (@modelcontextprotocol/sdk),
// speaking the 2025-11-25 experimental tasks dialect.  It is a *peer* for mcp-tasks-compat's
// interoperability tests: our Python client must run its tools as tasks against it.
//
// Tools (the same names and behaviour as `mcp-tasks-compat example-server`):
//   slow_echo(text, seconds=1.0, steps=4)  task-optional; a status message per step; returns text
//   fail(message)                          task-optional; ends in a tool error (isError result)
//   must_task(text)                        task-required; returns text
//   ask(question)                          task-required; elicits an answer inside the task (input_required)
//
// Usage:
//   node sdk1_server.mjs                              # stdio (stdout carries JSON-RPC)
//   node sdk1_server.mjs --http [--port N] [--host H] # streamable HTTP at http://H:N/mcp
// With --http, the first stdout line is {"url": "...", "pid": N} once the socket listens
// (--port 0, the default, lets the OS pick a free port).  Diagnostics go to stderr.

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const { values: options } = parseArgs({
  options: {
    http: { type: "boolean", default: false },
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "0" },
    "poll-interval-ms": { type: "string", default: "100" },
    "default-ttl-ms": { type: "string", default: "300000" },
  },
});

const POLL_INTERVAL_MS = Number(options["poll-interval-ms"]);
const DEFAULT_TTL_MS = Number(options["default-ttl-ms"]);

// One store for every session: the SDK passes the session id to each call, and the in-memory
// store hides a task from sessions other than the one that created it.
const taskStore = new InMemoryTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();

const log = (...parts) => process.stderr.write(`[sdk1_server] ${parts.join(" ")}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ content: [{ type: "text", text: String(value) }] });

/** True once the client cancelled the task (or it expired): the work must stop writing to it. */
async function stopped(store, taskId) {
  try {
    const task = await store.getTask(taskId);
    return task.status === "cancelled" || task.status === "completed" || task.status === "failed";
  } catch {
    return true; // expired and swept
  }
}

/** Runs `work(report)` in the background and stores its outcome, unless the task was cancelled. */
function runInBackground(store, taskId, work) {
  const report = async (message) => {
    if (await stopped(store, taskId)) throw new CancelledWork();
    await store.updateTaskStatus(taskId, "working", message);
  };
  (async () => {
    let status = "completed";
    let result;
    try {
      result = await work(report);
    } catch (error) {
      if (error instanceof CancelledWork) return;
      status = "failed";
      result = { ...text(error instanceof Error ? error.message : String(error)), isError: true };
    }
    if (await stopped(store, taskId)) return;
    try {
      await store.storeTaskResult(taskId, status, result);
    } catch (error) {
      log("result dropped for", taskId, String(error)); // cancelled between the check and the store
    }
  })();
}

class CancelledWork extends Error {}

/** The three task-handler callbacks the SDK asks for, around one async tool body. */
function taskTool(body) {
  return {
    async createTask(args, extra) {
      const task = await extra.taskStore.createTask({
        ttl: extra.taskRequestedTtl ?? DEFAULT_TTL_MS,
        pollInterval: POLL_INTERVAL_MS,
      });
      runInBackground(extra.taskStore, task.taskId, (report) => body(args, report));
      return { task };
    },
    async getTask(_args, extra) {
      return await extra.taskStore.getTask(extra.taskId);
    },
    async getTaskResult(_args, extra) {
      return await extra.taskStore.getTaskResult(extra.taskId);
    },
  };
}

function buildServer() {
  const server = new McpServer(
    { name: "ts-sdk1-task-peer", version: "1.0.0" },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue,
    },
  );
  const tasks = server.experimental.tasks;

  tasks.registerToolTask(
    "slow_echo",
    {
      description: "Echo text after `seconds`, with a status message at each of `steps` steps.",
      inputSchema: {
        text: z.string(),
        seconds: z.number().default(1.0),
        steps: z.number().int().default(4),
      },
      execution: { taskSupport: "optional" },
    },
    taskTool(async ({ text: value, seconds, steps }, report) => {
      const count = Math.max(1, steps);
      for (let step = 1; step <= count; step += 1) {
        await sleep((Math.max(0, seconds) * 1000) / count);
        await report(`step ${step}/${count}`);
      }
      return text(value);
    }),
  );

  tasks.registerToolTask(
    "fail",
    {
      description: "Always fails with `message` (a tool error result).",
      inputSchema: { message: z.string() },
      execution: { taskSupport: "optional" },
    },
    taskTool(async ({ message }) => {
      throw new Error(message);
    }),
  );

  tasks.registerToolTask(
    "must_task",
    {
      description: "Echo text; only runs as a task.",
      inputSchema: { text: z.string() },
      execution: { taskSupport: "required" },
    },
    taskTool(async ({ text: value }, report) => {
      await report("running as a task");
      return text(value);
    }),
  );

  // ask(question): the task moves to input_required and sends elicitation/create tagged with
  // related-task; the SDK queues it for the tasks/result stream (2025-11-25 side channel).
  tasks.registerToolTask(
    "ask",
    {
      description: "Ask the client a question (elicitation inside the task); returns the answer.",
      inputSchema: { question: z.string() },
      execution: { taskSupport: "required" },
    },
    {
      async createTask({ question }, extra) {
        const store = extra.taskStore;
        const task = await store.createTask({
          ttl: extra.taskRequestedTtl ?? DEFAULT_TTL_MS,
          pollInterval: POLL_INTERVAL_MS,
        });
        runInBackground(store, task.taskId, async () => {
          await store.updateTaskStatus(task.taskId, "input_required", "waiting for an answer");
          const answer = await server.server.elicitInput(
            {
              mode: "form",
              message: question,
              requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
            },
            { relatedTask: { taskId: task.taskId }, timeout: 60_000 },
          );
          await store.updateTaskStatus(task.taskId, "working", `answer: ${answer.action}`);
          return text(answer.action === "accept" ? String(answer.content?.answer) : answer.action);
        });
        return { task };
      },
      async getTask(_args, extra) {
        return await extra.taskStore.getTask(extra.taskId);
      },
      async getTaskResult(_args, extra) {
        return await extra.taskStore.getTaskResult(extra.taskId);
      },
    },
  );

  return server;
}

async function readJsonBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString("utf8");
  return raw.length === 0 ? undefined : JSON.parse(raw);
}

async function serveHttp() {
  const sessions = new Map(); // session id -> transport
  const httpServer = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname !== "/mcp") {
        res.writeHead(404).end();
        return;
      }
      const sessionId = req.headers["mcp-session-id"];
      const body = req.method === "POST" ? await readJsonBody(req) : undefined;
      let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
      if (transport === undefined) {
        if (req.method !== "POST" || sessionId !== undefined || !isInitializeRequest(body)) {
          res.writeHead(400, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              jsonrpc: "2.0",
              id: null,
              error: { code: -32000, message: "Bad Request: no valid session (initialize first)" },
            }),
          );
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      log("request failed:", error instanceof Error ? (error.stack ?? error.message) : String(error));
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  await new Promise((resolve) => httpServer.listen(Number(options.port), options.host, resolve));
  const address = httpServer.address();
  process.stdout.write(`${JSON.stringify({ url: `http://${options.host}:${address.port}/mcp`, pid: process.pid })}\n`);
  const shutdown = () => {
    for (const transport of sessions.values()) transport.close().catch(() => {});
    httpServer.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 500).unref();
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

async function serveStdio() {
  const transport = new StdioServerTransport();
  transport.onclose = () => process.exit(0);
  process.stdin.on("end", () => process.exit(0));
  await buildServer().connect(transport);
}

if (options.http) await serveHttp();
else await serveStdio();

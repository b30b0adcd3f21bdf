// End-to-end App Server client for `scv app-server --listen stdio`, driven
// by scv-server/appserver_e2e_test.go with vscode-jsonrpc (the JSON-RPC
// library of VS Code extensions, pinned in package.json) over JSON lines.
// It spawns the real binary, runs the scenario below against the test's
// scripted model, records every line in both directions, and prints a JSON
// summary on stdout; the Go test validates every recorded line against the
// schema the server exports.
//
// Environment: JSONRPC_DIR (vscode-jsonrpc's package directory), SCV_BIN,
// APP_CWD (the workspace), APP_TRANSCRIPT (the server's lines; the
// client's go to the same path with ".client" appended). The model must
// answer, in order: a bash tool call, a text reply, then a hang (for the
// interrupt).
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const rpc = await import(pathToFileURL(path.join(env("JSONRPC_DIR"), "lib/node/main.js")).href);
const { AbstractMessageReader, AbstractMessageWriter, createMessageConnection, ResponseError } = rpc.default ?? rpc;
const cwd = env("APP_CWD");

const child = spawn(env("SCV_BIN"), ["app-server", "--timeout-seconds=30", "--listen", "stdio"], { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const serverLines = [];
const clientLines = [];

// JSON lines instead of vscode-jsonrpc's Content-Length framing.
class LineReader extends AbstractMessageReader {
  constructor(stream) {
    super();
    this.stream = stream;
    this.partial = "";
  }
  listen(callback) {
    this.stream.on("data", (chunk) => {
      this.partial += chunk.toString("utf8");
      let i;
      while ((i = this.partial.indexOf("\n")) >= 0) {
        const line = this.partial.slice(0, i);
        this.partial = this.partial.slice(i + 1);
        if (line.trim() === "") continue;
        serverLines.push(line);
        try {
          callback(JSON.parse(line));
        } catch (e) {
          this.fireError(e);
        }
      }
    });
    this.stream.on("end", () => this.fireClose());
    return { dispose: () => {} };
  }
}
class LineWriter extends AbstractMessageWriter {
  constructor(stream) {
    super();
    this.stream = stream;
  }
  async write(msg) {
    const line = JSON.stringify(msg);
    clientLines.push(line);
    this.stream.write(line + "\n");
  }
  end() {
    this.stream.end();
  }
}

const writer = new LineWriter(child.stdin);
const conn = createMessageConnection(new LineReader(child.stdout), writer);
const notes = [];
const waiters = [];
conn.onNotification((method, params) => {
  notes.push({ method, params });
  for (const w of [...waiters]) if (w.method === method && w.pred(params)) {
    waiters.splice(waiters.indexOf(w), 1);
    w.resolve(params);
  }
});
const waitFor = (method, pred = () => true) => {
  const seen = notes.find((n) => n.method === method && pred(n.params) && !n.taken);
  if (seen) {
    seen.taken = true;
    return Promise.resolve(seen.params);
  }
  return new Promise((resolve) => waiters.push({ method, pred, resolve }));
};
const approvals = [];
conn.onRequest("approval/request", (params) => {
  approvals.push(params);
  return { decision: "allow" };
});
conn.listen();

const codeOf = async (p) => {
  try {
    await p;
    return 0;
  } catch (e) {
    return e instanceof ResponseError ? e.code : String(e);
  }
};

const summary = {};
const init = await conn.sendRequest("initialize", { clientInfo: { name: "vscode-jsonrpc-e2e", version: "1" }, capabilities: { optOutNotificationMethods: [] } });
summary.init = init;
await conn.sendNotification("initialized");
const th = await conn.sendRequest("thread/start", { agentKey: "default", cwd, metadata: { title: "e2e" } });
summary.threadStatus = th.status;
await waitFor("thread/started");

// A turn with a tool call needing approval, answered by request id.
const t1 = await conn.sendRequest("turn/start", { threadId: th.threadId, input: [{ type: "text", text: "touch it" }] });
summary.turnStatus = t1.status;
const done1 = await waitFor("turn/completed", (p) => p.turnId === t1.turnId);
summary.turn1 = { status: done1.status, finalOutput: done1.finalOutput };
summary.approvals = approvals.map((a) => a.toolName);
summary.resolved = notes.filter((n) => n.method === "approval/resolved").map((n) => n.params.decision);
summary.file = fs.existsSync(path.join(cwd, "touched"));

// thread/read equals what was streamed.
const read = await conn.sendRequest("thread/read", { threadId: th.threadId });
summary.readItems = read.items.map((i) => `${i.type}:${i.status}`);

// Interrupt a hanging turn; stale and missing turn ids.
const t2 = await conn.sendRequest("turn/start", { threadId: th.threadId, input: [{ type: "text", text: "hang" }] });
await waitFor("turn/started", (p) => p.turnId === t2.turnId);
summary.stale = await codeOf(conn.sendRequest("turn/interrupt", { threadId: th.threadId, expectedTurnId: "nope" }));
await conn.sendRequest("turn/interrupt", { threadId: th.threadId, expectedTurnId: t2.turnId });
const done2 = await waitFor("turn/completed", (p) => p.turnId === t2.turnId);
summary.interrupted = done2.status;
summary.noTurn = await codeOf(conn.sendRequest("turn/steer", { threadId: th.threadId, expectedTurnId: t2.turnId, input: [{ type: "text", text: "x" }] }));

// Catalog, schema, errors.
summary.models = (await conn.sendRequest("model/list", {})).models.map((m) => m.id);
summary.schemaFiles = Object.keys((await conn.sendRequest("schema/export", {})).jsonSchema).sort();
summary.unknownMethod = await codeOf(conn.sendRequest("thread/fly", {}));
summary.badParams = await codeOf(conn.sendRequest("turn/start", { threadId: 42 }));
summary.list = (await conn.sendRequest("thread/list", { cwd })).threads.map((t) => t.threadId === th.threadId);

writer.end();
summary.exit = await exited;
conn.dispose();
fs.writeFileSync(env("APP_TRANSCRIPT"), serverLines.join("\n") + "\n");
fs.writeFileSync(env("APP_TRANSCRIPT") + ".client", clientLines.join("\n") + "\n");
process.stdout.write(JSON.stringify(summary) + "\n");

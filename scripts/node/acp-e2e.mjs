// End-to-end ACP client for `scv acp`, driven by scv-server/acp_e2e_test.go
// with the official TypeScript SDK (@agentclientprotocol/sdk, pinned in
// package.json). It spawns the real agent, runs the scenario below against
// the test's scripted model, records every line the agent writes, and prints
// a JSON summary on stdout for the Go test to check (the Go test also
// validates the recorded lines against the schema the SDK ships).
//
// Environment: ACP_SDK_DIR (the SDK's package directory), SCV_BIN (the scv
// executable), ACP_CWD (the workspace), ACP_TRANSCRIPT (where to write the
// agent's lines; the client's go to the same path with ".client"
// appended, so the Go test can tell which request a response answers). The model must answer, in order: a write tool call, a text
// reply, then a text chunk followed by a hang (for the cancel).
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const acp = await import(pathToFileURL(path.join(env("ACP_SDK_DIR"), "dist/v1/stable/acp.js")).href);
const { client, methods, ndJsonStream, PROTOCOL_VERSION } = acp;
const cwd = env("ACP_CWD");

const child = spawn(env("SCV_BIN"), ["acp"], { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

// Tee the agent's output: every line is kept for the schema check.
const agentLines = [];
let partial = "";
const tee = new PassThrough();
child.stdout.on("data", (chunk) => {
  partial += chunk.toString("utf8");
  let i;
  while ((i = partial.indexOf("\n")) >= 0) {
    agentLines.push(partial.slice(0, i));
    partial = partial.slice(i + 1);
  }
  tee.write(chunk);
});
child.stdout.on("end", () => tee.end());

// Tee the client's output too.
const clientLines = [];
const toAgent = new Writable({
  write(chunk, _enc, done) {
    for (const l of chunk.toString("utf8").split("\n")) if (l.trim() !== "") clientLines.push(l);
    child.stdin.write(chunk, done);
  },
  final(done) {
    child.stdin.end();
    done();
  },
});

const updates = [];
let onUpdate = () => {};
const permissions = [];
const app = client({ name: "scv-acp-e2e" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
    onUpdate(params.update);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const codeOf = async (p) => {
  try {
    await p;
    return 0;
  } catch (e) {
    return e?.code ?? String(e);
  }
};

const summary = {};
const stream = ndJsonStream(Writable.toWeb(toAgent), Readable.toWeb(tee));
await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "scv-acp-e2e", version: "1" },
  });
  summary.init = { protocolVersion: init.protocolVersion, agent: init.agentInfo?.name, loadSession: init.agentCapabilities?.loadSession };

  const s = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  const sid = s.sessionId;
  summary.modes = s.modes?.availableModes?.map((m) => m.id);
  // The model option (the fake lists models): switch to another one.
  summary.configIds = s.configOptions?.map((o) => o.id);
  const set = await ctx.request("session/set_config_option", { sessionId: sid, configId: "model", value: "gpt-e2e" });
  summary.model = set.configOptions?.find((o) => o.id === "model")?.currentValue;

  // A prompt with a tool call and a permission round trip.
  const r1 = await ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "write hello.txt" }] });
  summary.promptStop = r1.stopReason;
  summary.promptKinds = updates.map((u) => u.sessionUpdate);
  summary.permissionKinds = permissions.map((p) => p.options.map((o) => o.kind));
  summary.file = fs.readFileSync(path.join(cwd, "hello.txt"), "utf8");

  // Cancel a turn that hangs after its first chunk.
  updates.length = 0;
  const firstChunk = new Promise((resolve) => {
    onUpdate = (u) => u.sessionUpdate === "agent_message_chunk" && resolve();
  });
  const r2p = ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "take forever" }] });
  await firstChunk;
  onUpdate = () => {};
  await ctx.notify(methods.agent.session.cancel, { sessionId: sid });
  summary.cancelStop = (await r2p).stopReason;

  // Errors.
  summary.unknownMethod = await codeOf(ctx.request("session/fly", {}));
  summary.badParams = await codeOf(ctx.request("session/prompt", { sessionId: 42, prompt: "nope" }));
  summary.unknownSession = await codeOf(ctx.request(methods.agent.session.prompt, { sessionId: "nope", prompt: [{ type: "text", text: "x" }] }));

  // Close, then load with replay: the history arrives before the answer.
  await ctx.request(methods.agent.session.close, { sessionId: sid });
  updates.length = 0;
  await ctx.request(methods.agent.session.load, { sessionId: sid, cwd, mcpServers: [] });
  summary.loadKinds = updates.map((u) => u.sessionUpdate);
  const list = await ctx.request(methods.agent.session.list, { cwd });
  summary.listed = list.sessions.map((x) => x.sessionId).includes(sid);
});

child.stdin.end();
summary.exit = await exited;
fs.writeFileSync(env("ACP_TRANSCRIPT"), agentLines.join("\n") + "\n");
fs.writeFileSync(env("ACP_TRANSCRIPT") + ".client", clientLines.join("\n") + "\n");
process.stdout.write(JSON.stringify(summary) + "\n");

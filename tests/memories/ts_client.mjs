// The MCP TypeScript SDK's client with a bearer key against /mcp (tests/memories/test_mcp_typescript_client.py).
// Usage: node ts_client.mjs <mcp url> <key>; calls every tool the key is listed, once, and prints
// one JSON line of what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "mmw-typescript-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const listed = new Set(tools.tools.map((t) => t.name));
const answers = {};
// callTool validates structuredContent against the tool's outputSchema (the SDK client does):
// a result that does not conform throws here.
async function call(name, args) {
  if (!listed.has(name)) return undefined;
  const result = await client.callTool({ name, arguments: args });
  answers[name] = { isError: Boolean(result.isError), structured: result.structuredContent ?? null };
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}
let saved, found, searched, resources, read;
if (listed.has("remember")) {
  saved = await call("remember", { content: "written by the TypeScript SDK", source_id: "ts.md", source_hash: "a" });
  found = await call("get_memory", { memory_id: saved.id });
  searched = await call("search", { query: "TypeScript SDK" });
  await call("validate_memory", { source_id: "ts.md", current_source_hash: "b" });
  await call("memory_history", { memory_id: saved.id });
  await call("recall_context", { task: "what did the TypeScript SDK write" });
  await call("list_workspaces", {});
  await call("search_sessions", { query: "anything said before" });
  await call("forget_session", { client: "ts-client", session_id: "none" });
  resources = await client.listResources();
  read = await client.readResource({ uri: `mmw://memories/${saved.id}` });
  await call("forget", { source_id: "nothing/here" });
}
if (listed.has("ledger_record")) {
  const paid = await call("ledger_record", { kind: "transaction", amount: "-12.50", currency: "EUR" });
  const rent = await call("ledger_record", {
    kind: "reminder", amount: "-900", currency: "JPY", due_at: "2099-01-31T09:00:00Z", repeat: "FREQ=MONTHLY",
  });
  await call("ledger_list", { limit: 1 });
  await call("ledger_balance", { by_category: true, by_month: true });
  await call("ledger_upcoming", {});
  await call("ledger_complete", { entry_id: rent.entry.id });
  await call("ledger_reverse", { entry_id: paid.entry.id, reason: "duplicate" });
}
console.log(JSON.stringify({
  server: client.getServerVersion(),
  tools: tools.tools.map((t) => ({ name: t.name, outputSchema: Boolean(t.outputSchema) })),
  called: answers,
  saved,
  found,
  searched,
  resources: resources ? resources.resources.map((r) => r.uri) : [],
  read: read ? read.contents.map((c) => c.uri) : [],
}));
await client.close();

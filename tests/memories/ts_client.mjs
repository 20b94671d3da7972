// The MCP TypeScript SDK's client with a bearer key against /mcp (tests/memories/test_mcp_typescript_client.py).
// Usage: node ts_client.mjs <mcp url> <key>; prints one JSON line of what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "mmw-typescript-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
// callTool validates structuredContent against the tool's outputSchema (the SDK client does)
const saved = await client.callTool({ name: "remember", arguments: { content: "written by the TypeScript SDK" } });
const found = await client.callTool({ name: "get_memory", arguments: { memory_id: saved.structuredContent.id } });
const searched = await client.callTool({ name: "search", arguments: { query: "TypeScript SDK" } });
const resources = await client.listResources();
const read = await client.readResource({ uri: `mmw://memories/${saved.structuredContent.id}` });
console.log(JSON.stringify({
  server: client.getServerVersion(),
  tools: tools.tools.map((t) => ({ name: t.name, outputSchema: Boolean(t.outputSchema) })),
  saved: saved.structuredContent,
  found: found.structuredContent,
  searched: searched.structuredContent,
  resources: resources.resources.map((r) => r.uri),
  read: read.contents.map((c) => c.uri),
}));
await client.close();

// A TCP proxy in front of the live server that loses answers: on the first `drop` connections it
// forwards the request, reads the server's whole answer (the server has committed: it answers after
// its transaction), then closes the client's side without a byte of it. Later connections are
// forwarded unchanged. The fault a retrying client must survive without writing twice.
import net from "node:net";

export async function answerDroppingProxy(target, drop = 1) {
  const { hostname, port } = new URL(target);
  let left = drop;
  const state = { dropped: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    client.pipe(upstream);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    if (left > 0) {
      left -= 1;
      let seen = Buffer.alloc(0);
      upstream.on("data", (chunk) => {
        seen = Buffer.concat([seen, chunk]);
        if (complete(seen)) {
          state.dropped += 1;
          client.destroy();
          upstream.destroy();
        }
      });
    } else {
      upstream.pipe(client);
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

function complete(data) {
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const head = data.subarray(0, end).toString("latin1");
  const match = /^content-length:\s*(\d+)/im.exec(head);
  if (match) return data.length - end - 4 >= Number(match[1]);
  return data.subarray(data.length - 5).toString("latin1") === "0\r\n\r\n";
}

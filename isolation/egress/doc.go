// Package egress owns a run's network egress: the per-run proxy on the host
// and the relay the in-sandbox init runs. A sandbox has an empty network
// namespace with only lo up and no resolver; the only way out is this
// bridge:
//
//	 sandbox (netns: lo only)                      host
//	┌──────────────────────────────┐              ┌─────────────────────────────────┐
//	│ tool ──▶ 127.0.0.1:ProxyPort │──┐           │ Proxy (one per run)             │
//	│  (HTTP_PROXY, ALL_PROXY …)   │  │  Unix     │  first byte 0x05 → SOCKS5       │
//	│                              │  ├─ socket ─▶│  first byte 0x00 → preamble     │
//	│ tool ──▶ 127.0.0.1:PORT ─────│──┘ (bind-   │  otherwise       → HTTP/1.x     │
//	│   (network:localhost:PORT)   │     mounted) │  rules → resolve → check → dial │
//	└──────────────────────────────┘              └─────────────────────────────────┘
//	            Relay (in the init)
//
// The relay is not trusted: anything in the sandbox can connect to the
// socket and speak any of the three protocols, so every decision is made by
// the Proxy. The relay only copies bytes.
//
// Localhost preamble: a connection accepted on 127.0.0.1:PORT inside the
// sandbox is relayed after five bytes
//
//	0x00 'L' 0x01 PORT_HI PORT_LO
//
// (0x00 never starts an HTTP request or a SOCKS5 greeting). The proxy
// answers one byte: 0x00 connected to the host's 127.0.0.1:PORT, 0x01 port
// not granted, 0x02 host port did not accept. After 0x00 the bytes flow
// unchanged in both directions; after anything else the proxy closes.
//
// Decisions, in order (see Rules.Decide and netrule.ClassifyAddr):
//  1. deny entries (policy) win; then allow entries (network:external
//     grants). A grant without a port allows 80 and 443, a deny without a
//     port covers every port; "*.example.com" matches subdomains, not the
//     apex; "*" allows any host name but not an IP literal (an IP literal
//     needs a grant of its own), while a deny "*" covers everything.
//  2. The proxy resolves a name itself with the host's resolver (or the
//     test Resolver of Config). If any address of the name is refused
//     (loopback, private, link-local, CGNAT, unspecified, multicast,
//     broadcast, reserved, cloud metadata, and the IPv4-mapped, NAT64 and
//     6to4 forms of these), the whole name is refused: a name that mixes
//     public and internal addresses is the shape of a rebinding attack, and
//     refusing it makes the verdict independent of address order.
//  3. The proxy dials exactly the addresses it checked, never the name, so
//     a second lookup cannot change the answer.
//
// Every connection attempt becomes a Record, available from Proxy.Records.
//
// Inspected hosts (Config.Credentials and Config.HTTPRules; see
// inspect.go and terminate.go): the proxy reads every request to the hosts
// of a credential or an HTTP rule. Plain HTTP it reads as it forwards; a
// CONNECT or SOCKS5 tunnel to such a host is terminated: the client's TLS
// with a certificate the run's CA (Config.CA) signs for the host, the
// upstream's TLS verified against Config.UpstreamRoots. Each request must
// name the tunnel's host, pass the host's HTTP rules, and carry only the
// stand-ins of credentials meant for the host, which are replaced with
// the real values (headers, Basic credentials, path and query); the
// response gets the stand-ins back. A stand-in on its way to any other
// host, in a request the proxy reads or in a tunnel's target name, is
// refused (verdict RefusedCredential). Tunnels to other hosts stay end to
// end: what a stand-in does there, it does as a meaningless string.
//
// This package must not import tool, permissions, policy or sandbox: the
// caller turns grants and policy into Rules. It never reads the
// environment: the test resolver (ParseHostsFile) is wired in by the
// caller only from operator-controlled configuration.
package egress

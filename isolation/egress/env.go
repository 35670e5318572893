package egress

import "strconv"

// ProxyEnv is the environment that points a tool at the relay on
// 127.0.0.1:proxyPort inside the sandbox. The controller appends it to the
// scrubbed environment of every command of a run with egress.
//
//   - http_proxy / HTTP_PROXY = http://127.0.0.1:PORT. curl reads only the
//     lower-case http_proxy (it ignores HTTP_PROXY, the "httpoxy" rule);
//     wget reads the lower-case names; Go, Python and most others read
//     both. Plain http:// URLs are then sent to the proxy as absolute-URI
//     requests, so the tool never resolves the name itself.
//   - https_proxy / HTTPS_PROXY = http://127.0.0.1:PORT. curl and wget send
//     CONNECT host:443; TLS stays end to end.
//   - all_proxy / ALL_PROXY = socks5h://127.0.0.1:PORT. curl uses it for
//     schemes without their own variable; "socks5h" makes curl pass the
//     host name to the proxy instead of resolving it (the sandbox has no
//     resolver). wget ignores it.
//   - no_proxy / NO_PROXY = localhost,127.0.0.1, so network:localhost ports
//     are reached directly on the sandbox's loopback, where the relay
//     listens.
func ProxyEnv(proxyPort int) []string {
	base := "127.0.0.1:" + strconv.Itoa(proxyPort)
	httpURL := "http://" + base
	socksURL := "socks5h://" + base
	const noProxy = "localhost,127.0.0.1"
	return []string{
		"HTTP_PROXY=" + httpURL,
		"HTTPS_PROXY=" + httpURL,
		"ALL_PROXY=" + socksURL,
		"NO_PROXY=" + noProxy,
		"http_proxy=" + httpURL,
		"https_proxy=" + httpURL,
		"all_proxy=" + socksURL,
		"no_proxy=" + noProxy,
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cancelAware is a transport whose connection sends no response to a
// request the client cancelled (notifications/cancelled): the protocol
// says the receiver should not, and a client may have reused its id. The
// handler of a cancelled call still ends its run (its context is
// cancelled, the sandbox torn down and the run recorded); only the answer
// is dropped.
//
// It also shows the client's initialize parameters, as sent, to
// onInitialize: the SDK's decoded capabilities cannot tell a client
// without roots from one with roots and no listChanged.
type cancelAware struct {
	inner        mcp.Transport
	onInitialize func(params json.RawMessage)
}

func (t cancelAware) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cancelConn{Connection: c, calls: map[jsonrpc.ID]bool{}, onInitialize: t.onInitialize}, nil
}

// cancelConn is cancelAware's connection: it notes the calls read and the
// cancellations of them, and drops the responses to cancelled calls.
type cancelConn struct {
	mcp.Connection
	mu sync.Mutex
	// calls are the ids of the client's calls not yet answered; true
	// once the client cancelled the call.
	calls        map[jsonrpc.ID]bool
	onInitialize func(json.RawMessage)
}

func (c *cancelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if !ok || err != nil {
		return msg, err
	}
	switch {
	case req.IsCall():
		if req.Method == "initialize" && c.onInitialize != nil {
			c.onInitialize(req.Params)
		}
		c.mu.Lock()
		c.calls[req.ID] = false
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			break
		}
		if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
			c.mu.Lock()
			if _, inFlight := c.calls[id]; inFlight {
				c.calls[id] = true
			}
			c.mu.Unlock()
		}
	}
	return msg, nil
}

func (c *cancelConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cancelled := c.calls[resp.ID]
		delete(c.calls, resp.ID)
		c.mu.Unlock()
		if cancelled {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}

// unadvertised are methods the SDK answers whose capability this server
// does not advertise (prompts, completions, resource subscriptions): a
// client that calls them gets "method not found", as from a server that
// has no such feature.
func unadvertised(method string) bool {
	switch method {
	case "prompts/list", "prompts/get", "completion/complete", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// onlyAdvertised is the receiving middleware that refuses unadvertised.
func onlyAdvertised(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if unadvertised(method) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %s (not a capability of this server)", method)}
		}
		return next(ctx, method, req)
	}
}

//go:build linux

package sbinit

import (
	"errors"
	"os"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestFrameRoundTrip(t *testing.T) {
	a, b, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	bc, err := fileConn(b)
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := newConn(a), newConn(bc)
	defer bc.Close()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	msgs := []*Message{
		{Type: MsgConfig, Config: &Config{RunID: "r1", Spec: &specs.Spec{Hostname: "sandbox"}, BuildRoot: true}},
		{Type: MsgExec, ID: 7, Exec: &ExecReq{Args: []string{"echo", "hi"}, Env: []string{"PATH=/bin"}, Cwd: "/"}},
		{Type: MsgSignal, ID: 0, Signal: 15},
	}
	big := make([]string, 2000)
	for i := range big {
		big[i] = "X=" + string(make([]byte, 100))
	}
	msgs = append(msgs, &Message{Type: MsgExec, ID: 8, Exec: &ExecReq{Args: []string{"true"}, Env: big}})
	go func() {
		for _, m := range msgs {
			var fds []int
			if m.Type == MsgExec {
				fds = []int{int(r.Fd()), int(w.Fd()), int(w.Fd())}
			}
			if err := ca.send(m, fds...); err != nil {
				t.Error(err)
			}
		}
	}()
	for _, want := range msgs {
		got, fds, err := cb.recv()
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != want.Type || got.ID != want.ID {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		wantFDs := 0
		if want.Type == MsgExec {
			wantFDs = 3
			if len(got.Exec.Env) != len(want.Exec.Env) {
				t.Fatalf("env: got %d entries, want %d", len(got.Exec.Env), len(want.Exec.Env))
			}
		}
		if len(fds) != wantFDs {
			t.Fatalf("%s: got %d fds, want %d", got.Type, len(fds), wantFDs)
		}
		closeFDs(fds)
	}
	if got := msgs[0].Config; got.RunID != "r1" {
		t.Fatal("config lost")
	}
}

func TestRecvRejectsMissingFDs(t *testing.T) {
	a, b, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	bc, err := fileConn(b)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	// A frame that announces descriptors it does not carry.
	ca := newConn(a)
	body := []byte(`{"type":"exec","id":1,"nfds":3}`)
	hdr := []byte{0, 0, 0, byte(len(body))}
	if _, err := ca.c.Write(append(hdr, body...)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := newConn(bc).recv(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol", err)
	}
}

func TestConnectArgs(t *testing.T) {
	got := ConnectArgs("/.sandboxed/control.sock")
	if len(got) != 2 || got[0] != InitArg || got[1] != "--connect=/.sandboxed/control.sock" {
		t.Fatalf("got %q", got)
	}
}

package sandbox

import (
	"os/user"
	"testing"
)

func TestInvokingUserBelievesSudoOnlyFromRoot(t *testing.T) {
	lookup := func(name string) (*user.User, error) {
		return &user.User{Username: name, Uid: "1000", Gid: "1000"}, nil
	}
	for _, c := range []struct {
		name          string
		euid, uid     int
		sudo          string
		wantUID, wGID uint32
	}{
		{"root under sudo", 0, 0, "ada", 1000, 1000},
		{"root without sudo", 0, 0, "", 0, 0},
		{"a user with SUDO_USER set", 1001, 1001, "root", 1001, 1001},
		{"a user without it", 1001, 1001, "", 1001, 1001},
	} {
		uid, gid := invokingUserOf(c.euid, c.uid, c.uid, c.sudo, lookup)
		if uid != c.wantUID || gid != c.wGID {
			t.Errorf("%s: %d:%d, want %d:%d", c.name, uid, gid, c.wantUID, c.wGID)
		}
	}
}

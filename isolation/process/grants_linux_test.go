package process

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// TestPlanGrantAccess: a reduced run's write grants are idmapped to the
// tool as root and handed over without root; nothing else is touched.
func TestPlanGrantAccess(t *testing.T) {
	one := func(in, out int) []syscall.SysProcIDMap {
		return []syscall.SysProcIDMap{{ContainerID: in, HostID: out, Size: 1}}
	}
	rootHost := hostIDs{euid: 0, egid: 0, reserved: DefaultReservedStart}
	user := hostIDs{euid: 1001, egid: 1001, subUID: 100000, subUIDCount: 65536, subGID: 200000, subGIDCount: 65536}
	bind := func(src, mode string) specs.Mount {
		return specs.Mount{Destination: "/w" + src, Type: "bind", Source: src, Options: []string{"bind", mode, "nosuid", "nodev"}}
	}
	plan := func(priv privilege.Privilege, owner *isolation.ID, mounts ...specs.Mount) *isolation.Plan {
		u := specs.User{UID: 65534, GID: 65534}
		if priv != privilege.Reduced {
			u = specs.User{UID: 1001, GID: 1001}
		}
		return &isolation.Plan{Privilege: priv, HostDir: "/run/sbx/r1", GrantOwner: owner,
			Spec: &specs.Spec{Process: &specs.Process{User: u}, Mounts: mounts}}
	}
	rw, ro, ours := bind("/home/u/out", "rw"), bind("/home/u/in", "ro"), bind("/run/sbx/r1/proxy.sock", "rw")
	mRootless, _ := planIDMapping(user, privilege.Reduced, 65534, 65534)
	for _, c := range []struct {
		name string
		h    hostIDs
		p    *isolation.Plan
		m    *idMapping
		want *grantAccess
		err  error
	}{
		{"same-as-user", user, plan(privilege.SameAsUser, nil, rw), nil, nil, nil},
		{"reduced, no write grant", user, plan(privilege.Reduced, nil, ro, ours), mRootless, nil, nil},
		{"root, reduced, sudo user", rootHost, plan(privilege.Reduced, &isolation.ID{UID: 1000, GID: 100}, rw, ro, ours), nil,
			&grantAccess{paths: []string{"/home/u/out"}, uids: one(1000, 65534), gids: one(100, 65534)}, nil},
		{"root, reduced, root's grant", rootHost, plan(privilege.Reduced, &isolation.ID{}, rw), nil,
			&grantAccess{paths: []string{"/home/u/out"}, uids: one(0, 65534), gids: one(0, 65534)}, nil},
		{"root, reduced, no owner in the plan: root", rootHost, plan(privilege.Reduced, nil, rw), nil,
			&grantAccess{paths: []string{"/home/u/out"}, uids: one(0, 65534), gids: one(0, 65534)}, nil},
		{"rootless, reduced", user, plan(privilege.Reduced, &isolation.ID{UID: 1001, GID: 1001}, rw, ro), mRootless,
			&grantAccess{paths: []string{"/home/u/out"}, handOver: true, to: reown.Owner{UID: 65534, GID: 65534}}, nil},
		{"rootless, reduced, someone else's grant", user, plan(privilege.Reduced, &isolation.ID{UID: 1000, GID: 1000}, rw), mRootless, nil, ErrBadPlan},
		{"rootless, reduced, no subordinate mapping", user, plan(privilege.Reduced, nil, rw), nil, nil, ErrBadPlan},
	} {
		got, err := planGrantAccess(c.h, c.p, c.m)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

package process_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// viewScript prints what a command sees of its sandbox, without what
// differs between two sandboxes of the same plan (mount and peer group
// ids, anonymous devices, times, pids).
const viewScript = `
sed -E 's/^[0-9]+ [0-9]+ [0-9]+:[0-9]+ //; s/(shared|master|propagate_from):[0-9]+/\1:N/g' /proc/self/mountinfo
for d in / /etc /etc/ssl /dev /dev/pts /tmp /work /work/in /work/out; do
	echo "== $d"; ls -A "$d" | LC_ALL=C sort | while read -r f; do stat -c '%n %f %u %g %s %N' "$d/$f" 2>&1 | sed "s|^$d/||"; done
done
cat /etc/passwd /etc/group /etc/hosts /etc/hostname /work/in/in
grep -E '^(Cap|NoNewPrivs|Seccomp|Uid|Gid|Groups)' /proc/self/status
cat /proc/sys/kernel/hostname
ulimit -a
test -e /proc/kcore && stat -c '%s' /proc/kcore
echo x > /tmp/x && echo y > /work/out/y && echo writable
! touch /x /usr/x /work/in/x 2>/dev/null && echo read-only
df -k /tmp | tail -1 | awk '{print $2}'
`

// TestWarmSameView checks that a sandbox claimed from a warm one gives a
// command the very view a cold start gives it: mounts, their options and
// propagation, the files of the root, /etc, /dev, credentials, limits,
// Landlock; and that the grants are what the host holds at the claim,
// also below the directory the root is built on (/tmp).
func TestWarmSameView(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name string
		priv privilege.Privilege
		opts []sandbox.SpecOpt
	}{
		{"reduced", privilege.Reduced, nil},
		{"same-as-user", privilege.SameAsUser, []sandbox.SpecOpt{sandbox.WithUser(1000, 1000)}},
		// Root's own tools run in a user namespace, their root built
		// under another identity (no skeleton ahead of the claim).
		{"same-as-user root", privilege.SameAsUser, nil},
		{"elevated", privilege.Elevated, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro, rw := t.TempDir(), t.TempDir()
			for _, d := range []string{ro, rw} {
				if err := os.Chmod(d, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			plan := func() *isolation.Plan {
				opts := append([]sandbox.SpecOpt{sandbox.WithReadBind(ro, "/work/in"), sandbox.WithWriteBind(rw, "/work/out"), sandbox.WithTmpfs(8 << 20)}, tc.opts...)
				p := testPlan(t, tc.priv, opts...)
				p.Limits.TmpfsBytes = 8 << 20
				return p
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := process.New()
			p := plan()
			key, ok := b.WarmKey(p)
			if !ok {
				t.Fatal("no warm key for the plan")
			}
			w, err := b.Prestart(ctx, key, p.RunID, p.HostDir)
			if err != nil {
				t.Fatal(err)
			}
			// What the host holds at the claim, after the prestart.
			if err := os.WriteFile(ro+"/in", []byte("written after the prestart\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			sb, err := w.Claim(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := sb.Close(context.Background()); err != nil {
					t.Error(err)
				}
				assertNothingLeft(t, p.RunID)
			})
			warm, errs, exit := run(t, sb, viewScript)
			if exit.Code != 0 {
				t.Fatalf("warm: exit %+v\n%s\n%s", exit, warm, errs)
			}
			os.Remove(rw + "/y")
			coldPlan := plan()
			cold, errs, exit := run(t, start(t, coldPlan), viewScript)
			if exit.Code != 0 {
				t.Fatalf("cold: exit %+v\n%s\n%s", exit, cold, errs)
			}
			if !strings.Contains(warm, "written after the prestart") {
				t.Errorf("the warm sandbox's grant is not what the host holds:\n%s", warm)
			}
			// The run ids differ, and so the cgroup paths of /proc/self.
			norm := regexp.MustCompile(regexp.QuoteMeta(p.RunID) + "|" + regexp.QuoteMeta(coldPlan.RunID))
			warm, cold = norm.ReplaceAllString(warm, "RUN"), norm.ReplaceAllString(cold, "RUN")
			if warm != cold {
				t.Errorf("warm and cold views differ:\n%s", lineDiff(cold, warm))
			}
		})
	}
}

// lineDiff lists the lines only one of cold and warm has.
func lineDiff(cold, warm string) string {
	count := map[string]int{}
	for _, l := range strings.Split(cold, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(warm, "\n") {
		count[l]--
	}
	var b strings.Builder
	for l, n := range count {
		switch {
		case n > 0:
			b.WriteString("cold only: " + l + "\n")
		case n < 0:
			b.WriteString("warm only: " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return "(same lines, another order)\n--- cold\n" + cold + "\n--- warm\n" + warm
	}
	return b.String()
}

// TestWarmDiscardAndClaimOnce checks that a warm sandbox serves one claim
// only, that a plan of another pool is refused (and the sandbox
// destroyed), and that Discard leaves nothing behind.
func TestWarmDiscardAndClaimOnce(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := process.New()
	p := testPlan(t, privilege.Reduced)
	key, _ := b.WarmKey(p)
	w, err := b.Prestart(ctx, key, p.RunID, p.HostDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, p.RunID)
	if _, err := w.Claim(ctx, p); err == nil {
		t.Fatal("a discarded sandbox was claimed")
	}

	p = testPlan(t, privilege.Reduced)
	w, err = b.Prestart(ctx, key, p.RunID, p.HostDir)
	if err != nil {
		t.Fatal(err)
	}
	other := testPlan(t, privilege.SameAsUser)
	other.RunID = p.RunID
	if _, err := w.Claim(ctx, other); err == nil {
		t.Fatal("a plan of another pool claimed the sandbox")
	}
	assertNothingLeft(t, p.RunID)
	if _, err := w.Claim(ctx, p); err == nil {
		t.Fatal("a sandbox whose claim failed was claimed again")
	}
}

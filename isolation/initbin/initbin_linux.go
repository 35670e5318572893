package initbin

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Embedded reports whether this build carries the init binary.
func Embedded() bool { return len(image) > 0 }

// Open returns the init binary as a sealed, close-on-exec memory file, or
// nil when this build does not carry it (see Embedded). The caller closes
// it once the init has been started; ExecPath names it for exec.
func Open() (*os.File, error) {
	if !Embedded() {
		return nil, nil
	}
	fd, err := unix.MemfdCreate("sandboxed-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("create the init's memory file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:sandboxed-init")
	if err := fill(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func fill(f *os.File) error {
	for b := image; len(b) > 0; {
		n, err := unix.Write(int(f.Fd()), b)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("write the init's memory file: %w", err)
		}
		b = b[n:]
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal the init's memory file: %w", err)
	}
	if err := unix.Fchmod(int(f.Fd()), 0o500); err != nil {
		return fmt.Errorf("chmod the init's memory file: %w", err)
	}
	return nil
}

// ExecPath is the path under which a child of this process executes f:
// the parent's descriptor table, which the child's own file descriptor
// setup cannot disturb.
func ExecPath(f *os.File) string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd())
}

package sandbox

import "testing"

// Every status maps to its exit code in one place; a result's recorded
// code and the process exit code agree.
func TestExitCodeFor(t *testing.T) {
	tests := []struct {
		status  Status
		own     int
		errCode string
		want    int
	}{
		{StatusOK, 0, "", 0},
		{StatusFailed, 3, "", 3},
		{StatusFailed, 137, "", 137},
		{StatusTimeout, 0, CodeTimeout, 124},
		{StatusOOM, 0, CodeQuota, 137},
		{StatusDenied, 0, CodePermission, 126},
		{StatusError, 0, CodeValidation, 2},
		{StatusError, 0, CodeInvalidParams, 2},
		{StatusError, 0, CodeMissingParam, 2},
		{StatusError, 0, CodeResourceMissing, 2},
		{StatusError, 0, CodeUserCancelled, 130},
		{StatusError, 0, CodeUnexpected, 125},
		{StatusError, 0, "", 125},
	}
	for _, tt := range tests {
		if got := ExitCodeFor(tt.status, tt.own, tt.errCode); got != tt.want {
			t.Errorf("ExitCodeFor(%s, %d, %q) = %d, want %d", tt.status, tt.own, tt.errCode, got, tt.want)
		}
		r := &Result{Status: tt.status, ExitCode: tt.own}
		if tt.errCode != "" {
			r.Error = &ErrorInfo{Code: tt.errCode}
		}
		if got := r.ProcessExitCode(); got != tt.want {
			t.Errorf("ProcessExitCode of %s/%q = %d, want %d", tt.status, tt.errCode, got, tt.want)
		}
	}
}

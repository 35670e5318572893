package permissions

import "testing"

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{"GITHUB_TOKEN": true, "api_key": true, "DB_PASSWORD": true, "passwd": true,
		"AWS_SECRET_ACCESS_KEY": true, "Credentials": true, "HOME": false, "PATH": false, "LOCATION": false, "": false} {
		if got := LooksSecret(name); got != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", name, got, want)
		}
	}
}

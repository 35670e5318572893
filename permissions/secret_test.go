package permissions

import "testing"

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{"GITHUB_TOKEN": true, "api_key": true, "DB_PASSWORD": true, "passwd": true,
		"AWS_SECRET_ACCESS_KEY": true, "Credentials": true,
		"GPG_PASSPHRASE": true, "BEARER": true, "SESSION_ID": true, "cookie_jar": true, "HTTP_AUTHORIZATION": true,
		"GH_AUTH": true, "auth": true, "NPM_PAT": true, "SIM-PIN": true, "OTP": true,
		"AUTHOR": false, "PATH_PREFIX": false, "SPINNER": false, "HOME": false, "PATH": false, "LOCATION": false, "": false} {
		if got := LooksSecret(name); got != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", name, got, want)
		}
	}
}

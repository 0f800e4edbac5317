package process

import (
	"fmt"
	"strings"

	"github.com/bourse/bourse"
)

// JobEnv checks a job's own variables against the names allow allows
// (Config.AllowEnv) and returns them: a malformed one is EInvalidOffer, one
// not allowed EPermission, and CheckpointEnv must be "signal" or "none".
// op names the check in the errors.
func JobEnv(op string, vars map[string]string, allow []string) (map[string]string, error) {
	env := map[string]string{}
	for k, v := range vars {
		if err := CheckName(k); err != nil || strings.ContainsRune(v, 0) {
			return nil, &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "job.env", Message: fmt.Sprintf("bad variable %q", k)}
		}
		if !EnvAllowed(allow, k) {
			return nil, &bourse.Error{Code: bourse.EPermission, Op: op, Field: "job.env", Message: fmt.Sprintf("the job may not set %s", k)}
		}
		env[k] = v
	}
	if v, ok := env[CheckpointEnv]; ok && v != "none" && v != "signal" {
		return nil, &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "job.env", Message: fmt.Sprintf(`%s is %q; want "signal" or "none"`, CheckpointEnv, v)}
	}
	return env, nil
}

// EnvAllowed says whether a job may set the variable k: CheckpointEnv
// always, the variables the runner sets never, the others where allow
// names them (exact names, or prefixes ending in "*").
func EnvAllowed(allow []string, k string) bool {
	switch k {
	case "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", ResultsEnv, "BOURSE_CONTRACT":
		return false
	case CheckpointEnv:
		return true
	}
	for _, a := range allow {
		if a == k || (strings.HasSuffix(a, "*") && strings.HasPrefix(k, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

package process

import (
	"fmt"
	"strings"

	"github.com/bourse/bourse"
)

// ArrayIndexEnv and ArraySizeEnv are a job array's (bourse bid offer
// --array): its offer's index, and how many the array has. Any job may
// set them, whatever allow_env says: allow_env keeps a job from changing
// how the host's programs behave (LD_PRELOAD, PYTHONPATH), and these two
// names mean nothing to any program but the job's own, nor can they carry
// anything but a number (JobEnv holds them to one).
const (
	ArrayIndexEnv = "BOURSE_ARRAY_INDEX"
	ArraySizeEnv  = "BOURSE_ARRAY_SIZE"
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
	for _, k := range []string{ArrayIndexEnv, ArraySizeEnv} {
		if v, ok := env[k]; ok && !isCount(v) {
			return nil, &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "job.env", Message: fmt.Sprintf("%s is %q; want a number, 0 to 999999", k, v)}
		}
	}
	return env, nil
}

// isCount says whether v is a number a job array may give: 1 to 6
// decimal digits.
func isCount(v string) bool {
	if v == "" || len(v) > 6 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// EnvAllowed says whether a job may set the variable k: CheckpointEnv
// and a job array's ArrayIndexEnv and ArraySizeEnv always, the variables the runner sets never, the others where allow
// names them (exact names, or prefixes ending in "*").
func EnvAllowed(allow []string, k string) bool {
	switch k {
	case "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", ResultsEnv, "BOURSE_CONTRACT":
		return false
	case CheckpointEnv, ArrayIndexEnv, ArraySizeEnv:
		return true
	}
	for _, a := range allow {
		if a == k || (strings.HasSuffix(a, "*") && strings.HasPrefix(k, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

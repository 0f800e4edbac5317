package main

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/spf13/cobra"
)

// jobUsers are the Unix users process jobs run as (process.Config.Users):
// job_users, then job_user_prefix numbered from 0 to job_user_count-1.
// With any, the agent's own files that jobs must not read are checked
// first: a file another user may read would hand it to every job.
func (c *serverConfig) jobUsers(cmd *cobra.Command, log *slog.Logger) ([]string, error) {
	users := append([]string(nil), c.Runner.JobUsers...)
	switch {
	case c.Runner.JobUserCount < 0:
		return nil, fmt.Errorf("server config: runner.job_user_count %d: want 0 or more", c.Runner.JobUserCount)
	case c.Runner.JobUserCount > 0 && c.Runner.JobUserPrefix == "":
		return nil, fmt.Errorf("server config: runner.job_user_count needs runner.job_user_prefix")
	}
	for i := range c.Runner.JobUserCount {
		users = append(users, fmt.Sprintf("%s%d", c.Runner.JobUserPrefix, i))
	}
	if len(users) == 0 {
		return nil, nil
	}
	for _, f := range []struct{ key, path string }{
		{"--config", c.file}, {"nats.password_file", c.NATS.PasswordFile}, {"nats.creds", c.NATS.Creds},
		{"nats.key", c.NATS.Key}, {"signing_key", c.SigningKey},
	} {
		if err := privateFile(f.path); err != nil {
			return nil, fmt.Errorf("server config: %s: %w; jobs run as other users (runner.job_users) and could read it", f.key, err)
		}
	}
	if fl := cmd.Flags().Lookup("nats-password"); fl != nil && fl.Changed && len(fl.Annotations[fromEnvAnnotation]) == 0 {
		log.Warn("the NATS password is on the command line, which every user of this machine, jobs included, can read in /proc; give it in nats.password_file or $BOURSE_NATS_PASSWORD")
	}
	return users, nil
}

// privateFile refuses a file that users other than the agent's may read:
// one readable by others, or by a group other than the agent's or root's.
func privateFile(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	mode := fi.Mode().Perm()
	if mode&0o004 != 0 {
		return fmt.Errorf("%s is readable by every user (mode %04o): chmod o-rwx %s", path, mode, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && mode&0o040 != 0 && st.Gid != 0 && int(st.Gid) != os.Getegid() {
		return fmt.Errorf("%s is readable by its group, gid %d, not the agent's (mode %04o): chmod g-rwx %s", path, st.Gid, mode, path)
	}
	return nil
}

package process

// SetSpools points the cron, at and linger folders clean looks in at
// folders of a test's, and returns the function that puts them back.
func SetSpools(cron, at []string, linger string) (restore func()) {
	oc, oa, ol := cronSpools, atSpools, lingerDir
	cronSpools, atSpools, lingerDir = cron, at, linger
	return func() { cronSpools, atSpools, lingerDir = oc, oa, ol }
}

// SetSchedulers points the cron and at programs and their allow and
// deny files at a test's (program, allow, deny for each), and returns
// the function that puts them back.
func SetSchedulers(files [2][3]string) (restore func()) {
	old := schedulers
	for i := range schedulers {
		schedulers[i].program, schedulers[i].allow, schedulers[i].deny = files[i][0], files[i][1], files[i][2]
	}
	return func() { schedulers = old }
}

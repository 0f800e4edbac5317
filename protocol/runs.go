package protocol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// RunnerKind names how a server runs jobs.
type RunnerKind string

const (
	// RunnerSynthetic runs no program: a job consumes the utilisation
	// profile its terms give (the demo, the simulator, tests).
	RunnerSynthetic RunnerKind = "synthetic"
	// RunnerProcess runs the program a job names, one of Runs.Programs.
	RunnerProcess RunnerKind = "process"
	// RunnerContainer runs the image a job names (JobSpec.Image), one from
	// Runs.Images' sources, in a container of its own; it runs nothing
	// else.
	RunnerContainer RunnerKind = "container"
)

// Limits of Runs.
const (
	MaxPrograms = 256
	maxProgram  = 1024
	maxKind     = 32
)

// Runs says what a server runs: its runner, the meter that measures its
// jobs, and the programs a job may name. A server says it in its hello
// and heartbeats, so that the exchange offers it only jobs it runs (Refuses
// is the rule, the same on both sides); what a server publishes of itself
// later (its asks) carries the same value.
type Runs struct {
	Runner RunnerKind `json:"runner"`
	// Meter is how the server measures its jobs' use, as contracts record
	// it; empty where it has no meter, and then it refuses every job
	// itself, saying why.
	Meter contract.Meter `json:"meter,omitempty"`
	// Programs are the programs a process runner's job may name, each as
	// the job must write it (the configuration's name and the path it
	// resolves to), sorted.
	Programs []string `json:"programs,omitempty"`
	// Images says which images a container runner pulls; nil for other
	// runners, and a container runner without it pulls none.
	Images *Images `json:"images,omitempty"`
	// Files says that the server takes a job's files (contract.Files),
	// and how large; nil where it takes none.
	Files *Files `json:"files,omitempty"`
}

// Files says how large an archive of a job's files a server takes.
type Files struct {
	MaxBytes int64 `json:"max_bytes"`
}

// Check checks what Runs may hold: a runner kind, a meter and programs of
// sane lengths. A kind this version does not know passes: a newer server's
// hello is understood, and Refuses offers such a server nothing.
func (r *Runs) Check() error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "protocol.Runs", Field: "runs." + field, Message: fmt.Sprintf(format, args...)}
	}
	if r.Runner == "" || len(r.Runner) > maxKind {
		return bad("runner", "want 1..%d characters", maxKind)
	}
	if len(r.Meter) > maxKind {
		return bad("meter", "longer than %d characters", maxKind)
	}
	if len(r.Programs) > MaxPrograms {
		return bad("programs", "%d programs; at most %d", len(r.Programs), MaxPrograms)
	}
	for i, p := range r.Programs {
		if p == "" || len(p) > maxProgram || strings.ContainsRune(p, 0) {
			return bad(fmt.Sprintf("programs[%d]", i), "want 1..%d characters, no NUL", maxProgram)
		}
	}
	if r.Files != nil && r.Files.MaxBytes < 1 {
		return bad("files.max_bytes", "%d; want more than 0", r.Files.MaxBytes)
	}
	if r.Images != nil {
		return r.Images.Check()
	}
	return nil
}

// Takes says whether a server that runs r may be offered job: a program
// needs a process runner that lists it, and a process runner runs nothing
// but programs; an image needs a container runner that pulls it, and a
// container runner runs nothing but images (a program outside a container
// would shed the fences its operator chose containers for: a client names
// an image that holds the program, and the program as its command). A nil
// r is a server that did not say what it runs (one older than Runs): it
// is taken to run no program and no image, which the synthetic runner,
// the older servers' default, did not refuse. Files need a server that
// says it takes them, up to their size. What Runs does not say (a
// job's variables, whether the meter works) the server itself checks when
// it decides. Refuses says why not.
func (r *Runs) Takes(job *contract.JobSpec) bool {
	why, _ := r.refusal(job)
	return why == takes
}

// Refuses is Takes's no as an error, *bourse.Error with code
// job_unsupported (or permission_denied for a program not listed) and a
// message that says why; nil where Takes says yes.
func (r *Runs) Refuses(job *contract.JobSpec) error {
	refuse := func(code bourse.Code, field, format string, args ...any) error {
		return &bourse.Error{Code: code, Op: "protocol.Runs", Field: field, Message: fmt.Sprintf(format, args...)}
	}
	why, detail := r.refusal(job)
	switch why {
	case unsaid:
		return refuse(bourse.EJobUnsupported, "job.command", "this server does not say what it runs (it is older than this exchange), so it is offered no program and no image")
	case noPrograms:
		return refuse(bourse.EJobUnsupported, "job.command", "this server runs synthetic jobs only: no program runs here, so %q would not; offer it a job with a profile", job.Command)
	case noImages:
		return refuse(bourse.EJobUnsupported, "job.image", "this server runs %s, not container images, so %s would not run here", r.Runner.runsWhat(), job.Image)
	case onlyPrograms:
		return refuse(bourse.EJobUnsupported, "job.command", "this server runs programs: the offer must name a command")
	case onlyImages:
		return refuse(bourse.EJobUnsupported, "job.image", "this server runs container images only: the offer must name an image (job.image; a program it holds may be its command)")
	case notListed:
		return refuse(bourse.EPermission, "job.command", "%s", NotAllowed(job.Command, r.Programs))
	case notPulled:
		return refuse(bourse.EJobUnsupported, "job.image", "%s", detail)
	case noFiles:
		return refuse(bourse.EJobUnsupported, "job.files", "this server takes no files: offer the job without them, or to a server that takes them (bourse bid servers)")
	case filesTooLarge:
		return refuse(bourse.EJobUnsupported, "job.files", "the files are %d bytes; this server takes at most %d", job.Files.Bytes, r.Files.MaxBytes)
	case unknownKind:
		return refuse(bourse.EJobUnsupported, "job.command", "this server runs jobs of a kind this exchange does not know (%q)", r.Runner)
	}
	return nil
}

// runsWhat says in words what a runner that runs no image runs.
func (k RunnerKind) runsWhat() string {
	if k == RunnerProcess {
		return "the programs it lists"
	}
	return "synthetic jobs only"
}

// why a server does not take a job.
type why int

const (
	takes         why = iota
	unsaid            // a program or an image, to a server that does not say what it runs
	noPrograms        // a program, to a synthetic runner
	noImages          // an image, to a runner other than a container runner
	onlyPrograms      // no program, to a process runner
	onlyImages        // no image, to a container runner
	notListed         // a program not among the process runner's
	notPulled         // an image from none of the container runner's sources
	unknownKind       // a runner this version does not know
	noFiles           // files, to a server that takes none
	filesTooLarge     // files over the server's limit
)

// refusal says why r does not take job, and for notPulled the words.
func (r *Runs) refusal(job *contract.JobSpec) (why, string) {
	program := job != nil && job.Command != ""
	image := job != nil && job.Image != ""
	switch {
	case r == nil:
		if program || image {
			return unsaid, ""
		}
	case image && (r.Runner == RunnerSynthetic || r.Runner == RunnerProcess):
		return noImages, ""
	case r.Runner == RunnerSynthetic:
		if program {
			return noPrograms, ""
		}
	case r.Runner == RunnerProcess:
		if !program {
			return onlyPrograms, ""
		}
		if !slices.Contains(r.Programs, job.Command) {
			return notListed, ""
		}
	case r.Runner == RunnerContainer:
		if !image {
			return onlyImages, ""
		}
		if ok, why := r.Images.allows(job.Image); !ok {
			return notPulled, why
		}
	default:
		return unknownKind, ""
	}
	if job != nil && job.Files != nil {
		switch {
		case r == nil || r.Files == nil:
			return noFiles, ""
		case job.Files.Bytes > r.Files.MaxBytes:
			return filesTooLarge, ""
		}
	}
	return takes, ""
}

// NotAllowed says that a job's command is none of a server's programs,
// and names them: a job must name a program as the list writes it, so
// "python3" is not "/usr/bin/python3".
func NotAllowed(command string, programs []string) string {
	if len(programs) == 0 {
		return fmt.Sprintf("%q is not a program this server runs: it runs none", command)
	}
	list := programs
	const shown = 16
	more := ""
	if len(list) > shown {
		list, more = list[:shown], fmt.Sprintf(" and %d more", len(programs)-shown)
	}
	return fmt.Sprintf("%q is not a program this server runs: it runs %s%s (name one exactly as listed)", command, strings.Join(list, ", "), more)
}

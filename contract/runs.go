package contract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bourse/bourse"
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

// Runs says what a server runs: its runner, the meter that measures its
// jobs, and the programs a job may name. A server says it in its hello
// and heartbeats (protocol.Runs carries it and checks its lengths), so
// that the exchange offers it only jobs it runs: Takes is the rule, the
// same on both sides; what a server publishes of itself later (its asks)
// carries the same value.
type Runs struct {
	Runner RunnerKind `json:"runner"`
	// Meter is how the server measures its jobs' use, as contracts record
	// it; empty where it has no meter, and then it refuses every job
	// itself, saying why.
	Meter Meter `json:"meter,omitempty"`
	// Programs are the programs a process runner's job may name, each as
	// the job must write it (the configuration's name and the path it
	// resolves to), sorted.
	Programs []string `json:"programs,omitempty"`
	// Images says which images a container runner pulls; nil for other
	// runners, and a container runner without it pulls none.
	Images *Images `json:"images,omitempty"`
	// Files says that the server takes a job's files (Files), and how
	// large; nil where it takes none.
	Files *FilesLimit `json:"files,omitempty"`
}

// FilesLimit says how large an archive of a job's files a server takes.
type FilesLimit struct {
	MaxBytes int64 `json:"max_bytes"`
}

// Images says which container images a container runner pulls, and how
// large: what a client needs to know to name one it will run. The server
// pulls only from these sources, with its own credentials; a job names
// an image, never where its credentials are.
type Images struct {
	// Allowed are the sources of the images it pulls: a registry
	// ("ghcr.io", "127.0.0.1:5000": any image there), or a registry and a
	// repository prefix ("docker.io/library", "ghcr.io/acme": that
	// repository and those below it, ghcr.io/acme/train but not
	// ghcr.io/acmecorp/x). Each starts with its registry's host, as a
	// job's reference reads once filled in (ParseImageRef): busybox is
	// docker.io/library/busybox.
	Allowed []string `json:"allowed"`
	// MaxBytes bounds an image as pulled (its layers, compressed) and
	// MaxUnpackedBytes as unpacked on the server's disk; 0 where the
	// server says no bound.
	MaxBytes         int64 `json:"max_bytes,omitempty"`
	MaxUnpackedBytes int64 `json:"max_unpacked_bytes,omitempty"`
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
func (r *Runs) Takes(job *JobSpec) bool {
	why, _ := r.refusal(job)
	return why == takes
}

// Refuses is Takes's no as an error, *bourse.Error with code
// job_unsupported (or permission_denied for a program not listed) and a
// message that says why; nil where Takes says yes.
func (r *Runs) Refuses(job *JobSpec) error {
	const op = "contract.Runs"
	why, detail := r.refusal(job)
	switch why {
	case unsaid:
		return fail(bourse.EJobUnsupported, op, "job.command", "this server does not say what it runs (it is older than this exchange), so it is offered no program and no image")
	case noPrograms:
		return fail(bourse.EJobUnsupported, op, "job.command", "this server runs synthetic jobs only: no program runs here, so %q would not; offer it a job with a profile", job.Command)
	case noImages:
		return fail(bourse.EJobUnsupported, op, "job.image", "this server runs %s, not container images, so %s would not run here", r.Runner.runsWhat(), job.Image)
	case onlyPrograms:
		return fail(bourse.EJobUnsupported, op, "job.command", "this server runs programs: the offer must name a command")
	case onlyImages:
		return fail(bourse.EJobUnsupported, op, "job.image", "this server runs container images only: the offer must name an image (job.image; a program it holds may be its command)")
	case notListed:
		return fail(bourse.EPermission, op, "job.command", "%s", NotAllowed(job.Command, r.Programs))
	case notPulled:
		return fail(bourse.EJobUnsupported, op, "job.image", "%s", detail)
	case noFiles:
		return fail(bourse.EJobUnsupported, op, "job.files", "this server takes no files: offer the job without them, or to a server that takes them (bourse bid servers)")
	case filesTooLarge:
		return fail(bourse.EJobUnsupported, op, "job.files", "the files are %d bytes; this server takes at most %d", job.Files.Bytes, r.Files.MaxBytes)
	case unknownKind:
		return fail(bourse.EJobUnsupported, op, "job.command", "this server runs jobs of a kind this exchange does not know (%q)", r.Runner)
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
func (r *Runs) refusal(job *JobSpec) (why, string) {
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

// allows says whether the image ref names is one of the sources', and if
// not, why.
func (im *Images) allows(image string) (bool, string) {
	ref, err := ParseImageRef(image)
	if err != nil {
		return false, bourse.ErrorMessage(err)
	}
	var sources []string
	if im != nil {
		sources = im.Allowed
	}
	name := ref.Name()
	for _, s := range sources {
		src, err := ParseImageSource(s)
		if err == nil && (name == src || strings.HasPrefix(name, src+"/")) {
			return true, ""
		}
	}
	if len(sources) == 0 {
		return false, fmt.Sprintf("%s is not an image this server pulls: it pulls none", ref)
	}
	return false, fmt.Sprintf("%s is not an image this server pulls: it pulls from %s", ref, strings.Join(sources, ", "))
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

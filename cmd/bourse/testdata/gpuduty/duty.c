// duty keeps GPU 0 busy a known fraction of each second, as the python
// job of TestGPUMarket does, but in a container image with no CUDA of its
// own: it loads the driver's libcuda.so.1, which the container runner
// mounts from the host (CDI, or the driver's libraries it finds), and
// runs a kernel given as PTX, which the driver compiles for whatever GPU
// it finds. Each kernel spins every thread of a grid covering all the
// SMs on the GPU's nanosecond timer, so that by any of NVML's measures the
// GPU is busy while it runs. Its kernels are timed with CUDA events: the
// truth the meter is held to, written to $BOURSE_RESULTS/kernel.json
// after every kernel, and once more on SIGTERM before it exits.
//
//	duty SECONDS DUTY
//
// Built by scripts/gpu-duty-root.sh (make gpu-tests), never by make test.
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUevent, *CUstream;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
static CUresult (*cuEventCreate)(CUevent *, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);

enum { attrMultiprocessors = 16 };

// spin keeps its thread busy for ns nanoseconds of the GPU's global timer.
static const char ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry spin(.param .u64 ns)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .b64 %r<5>;\n"
    "  ld.param.u64 %r1, [ns];\n"
    "  mov.u64 %r2, %globaltimer;\n"
    "LOOP:\n"
    "  mov.u64 %r3, %globaltimer;\n"
    "  sub.u64 %r4, %r3, %r2;\n"
    "  setp.lt.u64 %p, %r4, %r1;\n"
    "  @%p bra LOOP;\n"
    "  ret;\n"
    "}\n";

static volatile sig_atomic_t stopping;
static double kernelMS;
static char out[4096];

static void onTerm(int sig) { (void)sig; stopping = 1; }

static void *sym(void *lib, const char *name) {
	void *f = dlsym(lib, name);
	if (f == NULL) {
		fprintf(stderr, "duty: libcuda has no %s\n", name);
		exit(2);
	}
	return f;
}

static void check(CUresult r, const char *what) {
	if (r != 0) {
		fprintf(stderr, "duty: %s: CUDA error %d\n", what, r);
		exit(2);
	}
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void save(void) {
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	FILE *f = fopen(tmp, "w");
	if (f == NULL) {
		fprintf(stderr, "duty: %s: %s\n", tmp, strerror(errno));
		exit(2);
	}
	fprintf(f, "{\"kernel_seconds\": %.6f}\n", kernelMS / 1000.0);
	fclose(f);
	rename(tmp, out);
}

// rest sleeps s seconds, or until a SIGTERM.
static void rest(double s) {
	if (s <= 0)
		return;
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	while (!stopping && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: duty SECONDS DUTY\n");
		return 2;
	}
	int seconds = atoi(argv[1]);
	double duty = atof(argv[2]);
	const char *results = getenv("BOURSE_RESULTS");
	snprintf(out, sizeof out, "%s/kernel.json", results ? results : ".");
	struct sigaction sa = {0};
	sa.sa_handler = onTerm;
	sigaction(SIGTERM, &sa, NULL);

	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (lib == NULL) {
		fprintf(stderr, "duty: %s (LD_LIBRARY_PATH=%s)\n", dlerror(), getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
		return 2;
	}
	cuInit = sym(lib, "cuInit");
	cuDeviceGet = sym(lib, "cuDeviceGet");
	cuDeviceGetAttribute = sym(lib, "cuDeviceGetAttribute");
	cuCtxCreate = sym(lib, "cuCtxCreate_v2");
	cuModuleLoadData = sym(lib, "cuModuleLoadData");
	cuModuleGetFunction = sym(lib, "cuModuleGetFunction");
	cuLaunchKernel = sym(lib, "cuLaunchKernel");
	cuEventCreate = sym(lib, "cuEventCreate");
	cuEventRecord = sym(lib, "cuEventRecord");
	cuEventSynchronize = sym(lib, "cuEventSynchronize");
	cuEventElapsedTime = sym(lib, "cuEventElapsedTime");

	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction spin;
	CUevent start, end;
	int sms;
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	check(cuDeviceGetAttribute(&sms, attrMultiprocessors, dev), "cuDeviceGetAttribute");
	check(cuCtxCreate(&ctx, 0, dev), "cuCtxCreate");
	check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
	check(cuModuleGetFunction(&spin, mod, "spin"), "cuModuleGetFunction");
	check(cuEventCreate(&start, 0), "cuEventCreate");
	check(cuEventCreate(&end, 0), "cuEventCreate");
	printf("duty: GPU 0 has %d SMs\n", sms);
	fflush(stdout);

	// Periods of a second are counted, not the wall clock: a job frozen
	// and thawed goes on with the periods it had left.
	for (int i = 0; i < seconds && !stopping; i++) {
		double period = now();
		while (duty > 0 && !stopping && now() < period + duty) {
			unsigned long long ns = (unsigned long long)((period + duty - now()) * 1e9);
			if (ns > 10000000ULL)
				ns = 10000000ULL; // 10 ms a kernel: a SIGTERM is heard soon
			void *args[] = {&ns};
			float ms = 0;
			check(cuEventRecord(start, NULL), "cuEventRecord");
			check(cuLaunchKernel(spin, 4 * sms, 1, 1, 256, 1, 1, 0, NULL, args, NULL), "cuLaunchKernel");
			check(cuEventRecord(end, NULL), "cuEventRecord");
			check(cuEventSynchronize(end), "cuEventSynchronize");
			check(cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
			kernelMS += ms;
			save();
		}
		rest(period + 1 - now());
		printf("period %d: kernel %.3f s\n", i + 1, kernelMS / 1000.0);
		fflush(stdout);
	}
	save();
	return 0;
}

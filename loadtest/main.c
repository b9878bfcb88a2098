/* main.c — flashkernel-loadtest: options, the questions to the server, one level per concurrency value, the
 * report; SIGINT/SIGTERM stop the run and keep what was measured. The exit status is documented in --help. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "http.h"
#include "options.h"
#include "probe.h"
#include "prompts.h"
#include "report.h"
#include "request.h"
#include "runner.h"
#include "stats.h"
#include "url.h"

enum { EXIT_ALL_OK = 0, EXIT_FAILED_REQUESTS = 1, EXIT_USAGE = 2, EXIT_SETUP = 3 };
#define GRACE_S 5.0    /* after SIGINT, how long requests in flight may take */
#define PROBE_MAX_S 30 /* limit for each question to the server before the run */

static atomic_int stop_signal; /* the signal that stopped the run, 0 while running */
static int stop_pipe[2] = {-1, -1}; /* its read end becomes readable then: client threads poll it */

static void on_signal(int sig)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&stop_signal, &expected, sig)) {
        int saved = errno;
        ssize_t w = write(stop_pipe[1], "x", 1);
        (void)w; /* nothing to do if the pipe is full: one byte is enough, and it is already there */
        errno = saved;
    }
}

static int setup_signals(void)
{
    if (pipe(stop_pipe) < 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (fcntl(stop_pipe[i], F_SETFD, FD_CLOEXEC) < 0 || fcntl(stop_pipe[i], F_SETFL, O_NONBLOCK) < 0)
            return -1;
    /* SA_RESETHAND: the second Ctrl-C gets the default action and ends the process at once */
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGPIPE, &ign, NULL) < 0)
        return -1;
    return 0;
}

/* 256+ clients need as many sockets: raise the soft limit on open files to the hard one, and grow the descriptor
 * table to hold `need` now, while this is the only thread: a threaded process whose table grows during a burst of
 * connects waits for an RCU grace period at each doubling (milliseconds each), and every client's socket() with it,
 * which the latencies would then count. */
static void raise_fd_limit(int need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl); /* best effort: connects report EMFILE otherwise */
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)need >= rl.rlim_cur)
        need = rl.rlim_cur > 1 ? (int)rl.rlim_cur - 1 : 0;
    const int any = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (any >= 0) {
        const int high = fcntl(any, F_DUPFD_CLOEXEC, need);
        if (high >= 0)
            close(high);
        close(any);
    }
}

static char *join_args(int argc, char **argv)
{
    buf b = {0};
    bool ok = true;
    for (int i = 0; ok && i < argc; i++)
        ok = buf_printf(&b, i ? " %s" : "%s", argv[i]);
    if (!ok)
        buf_free(&b);
    return b.s;
}

static void usage_error(const char *msg)
{
    fprintf(stderr, "flashkernel-loadtest: %s\nTry 'flashkernel-loadtest --help'.\n", msg);
}

int main(int argc, char **argv)
{
    char err[512];
    options o;
    if (options_parse(argc, argv, &o, err, sizeof err)) {
        usage_error(err);
        options_free(&o);
        return EXIT_USAGE;
    }
    if (o.help) {
        options_usage(stdout);
        options_free(&o);
        return EXIT_ALL_OK;
    }
    url u;
    if (url_parse(o.url, &u, err, sizeof err)) {
        usage_error(err);
        options_free(&o);
        return EXIT_USAGE;
    }

    int rc = EXIT_SETUP;
    FILE *json = NULL;
    http_target target = {0};
    prompts pr = {0};
    request_config rq = {0};
    char *model = NULL, *json_part = NULL, *command = join_args(argc, argv);
    const int levels = options_levels(&o);
    level_summary *sums = calloc((size_t)levels, sizeof *sums);
    level_results *res = calloc((size_t)levels, sizeof *res);
    int n_levels = 0;
    run_info ri = {.command = command ? command : argv[0], .max_model_len = -1};

    if (!sums || !res) {
        fprintf(stderr, "flashkernel-loadtest: out of memory\n");
        goto out;
    }
    if (setup_signals()) {
        fprintf(stderr, "flashkernel-loadtest: cannot set up signal handling: %s\n", strerror(errno));
        goto out;
    }
    raise_fd_limit(options_max_concurrency(&o) + 64);
    /* The results go to OUT.part, renamed to OUT at the end: a run that cannot start leaves an earlier OUT alone,
     * and one that cannot write fails before it runs, not after. */
    if (o.json_out) {
        json_part = malloc(strlen(o.json_out) + sizeof ".part");
        if (json_part)
            sprintf(json_part, "%s.part", o.json_out);
        if (!json_part || !(json = fopen(json_part, "w"))) {
            fprintf(stderr, "flashkernel-loadtest: cannot write --json %s: %s\n", o.json_out,
                    json_part ? strerror(errno) : "out of memory");
            goto out;
        }
    }
    if (http_target_init(&target, &u, err, sizeof err)) {
        fprintf(stderr, "flashkernel-loadtest: %s\n", err);
        goto out;
    }

    char started[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    ri.started = started;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ri.seed = o.seed_given ? o.seed : (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();

    /* The served model (its name goes into /v1/completions requests and the report). */
    double probe_s = o.timeout_s < PROBE_MAX_S ? o.timeout_s : PROBE_MAX_S;
    http_limits lim = {.deadline = clock_now() + probe_s, .stop_fd = stop_pipe[0], .grace_s = 0};
    int served_vocab = 0; /* llama-server's /v1/models says n_vocab */
    probe_status ps = probe_model(&target, &lim, &model, &ri.max_model_len, &served_vocab, err, sizeof err);
    if (ps == PROBE_UNREACHABLE) {
        fprintf(stderr, "flashkernel-loadtest: cannot reach the server: %s\n", err);
        goto out;
    }
    if (ps != PROBE_OK)
        fprintf(stderr, "flashkernel-loadtest: warning: no model name (%s); going on without it\n", err);
    ri.model = model;

    if (o.prompts_file) {
        if (prompts_load(&pr, o.prompts_file, err, sizeof err)) {
            fprintf(stderr, "flashkernel-loadtest: %s\n", err);
            goto out;
        }
    } else {
        ri.vocab = o.vocab;
        ri.vocab_source = "--vocab";
        if (!ri.vocab && served_vocab > 0) {
            ri.vocab = served_vocab;
            ri.vocab_source = "n_vocab of GET /v1/models";
        }
        if (!ri.vocab) {
            lim.deadline = clock_now() + probe_s;
            ps = probe_vocab(&target, &lim, &ri.vocab, err, sizeof err);
            if (ps != PROBE_OK) {
                fprintf(stderr, "flashkernel-loadtest: cannot find the vocabulary size (%s); pass --vocab N\n", err);
                goto out;
            }
            ri.vocab_source = "found through /detokenize";
        }
        prompts_random(&pr, o.prompt_len, ri.vocab, ri.seed);
        if (ri.max_model_len > 0 && o.prompt_len + o.max_tokens > ri.max_model_len)
            fprintf(stderr,
                    "flashkernel-loadtest: warning: --prompt-len %d + --max-tokens %d exceeds the server's "
                    "max_model_len %d: expect 400s (or shortened outputs)\n",
                    o.prompt_len, o.max_tokens, ri.max_model_len);
    }
    if (request_config_init(&rq, o.ep, o.stream, o.max_tokens, o.ignore_eos, model)) {
        fprintf(stderr, "flashkernel-loadtest: out of memory\n");
        goto out;
    }
    rq.target = &target;
    rq.max_tokens = o.max_tokens;
    rq.cancel_rate = o.cancel_rate;
    rq.timeout_s = o.timeout_s;
    rq.stop_fd = stop_pipe[0];
    rq.grace_s = GRACE_S;

    report_header(stdout, &o, &ri);
    report_table_header(stdout, o.n_rates > 0);
    bool any_failed = false, broken = false;
    for (int i = 0; i < levels && !atomic_load(&stop_signal); i++) {
        int c = options_concurrency(&o, i);
        double rate = options_rate(&o, i);
        runner_config rc_ = {
            .rq = &rq, .prompts = &pr, .concurrency = c, .rate = rate,
            .requests = options_requests(&o, i),
            .duration_s = o.duration_s, .seed = ri.seed, .level = (unsigned)i, .stop = &stop_signal,
            .stop_fd = stop_pipe[0], .progress_tty = isatty(STDERR_FILENO),
        };
        int r = runner_run(&rc_, &res[i], err, sizeof err);
        n_levels++;
        if (stats_summarize(res[i].r, res[i].n, c, rate, o.stream, &sums[i])) {
            fprintf(stderr, "flashkernel-loadtest: out of memory\n");
            broken = true;
            break;
        }
        report_row(stdout, &sums[i], atomic_load(&stop_signal) != 0, o.n_rates > 0);
        any_failed = any_failed || sums[i].failed > 0;
        if (r) {
            fprintf(stderr, "flashkernel-loadtest: level %d (concurrency %d) stopped: %s\n", i + 1, c, err);
            broken = true;
            break;
        }
    }
    int sig = atomic_load(&stop_signal);
    ri.interrupted = sig != 0;
    if (sig)
        fprintf(stderr, "flashkernel-loadtest: stopped by signal %d: the results above are partial\n", sig);

    rc = broken ? EXIT_SETUP : sig ? 128 + sig : any_failed ? EXIT_FAILED_REQUESTS : EXIT_ALL_OK;
    if (json) {
        errno = 0;
        int w = report_json(json, &o, &ri, sums, res, n_levels);
        int c = fclose(json);
        json = NULL;
        if (w || c || rename(json_part, o.json_out)) {
            fprintf(stderr, "flashkernel-loadtest: cannot write --json %s: %s\n", o.json_out,
                    errno ? strerror(errno) : "out of memory");
            unlink(json_part);
            rc = EXIT_SETUP;
        }
    }

out:
    if (rc == EXIT_SETUP && atomic_load(&stop_signal)) /* interrupted while setting up: say so */
        rc = 128 + atomic_load(&stop_signal);
    if (json) {
        fclose(json);
        unlink(json_part);
    }
    free(json_part);
    for (int i = 0; i < n_levels; i++) {
        stats_free(&sums[i]);
        runner_results_free(&res[i]);
    }
    free(sums);
    free(res);
    request_config_free(&rq);
    prompts_free(&pr);
    free(model);
    http_target_free(&target);
    url_free(&u);
    options_free(&o);
    free(command);
    return rc;
}

/* test_server_metrics.c — server/metrics.c: histogram buckets (upper bounds inclusive, cumulative in the text, +Inf,
 * _sum and _count), vLLM's metric names and the model_name label, label escaping, and the exposition's structure
 * (every sample after its # HELP and # TYPE, values that parse). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

static void expect_line(const char *text, const char *line)
{
    char want[512];
    snprintf(want, sizeof want, "\n%s\n", line);
    if (!strstr(text, want))
        fail_msg("line \"%s\" not in:\n%s", line, text);
}

static char *format(const metrics *m, const metrics_gauges *g, const char *name)
{
    size_t len = 0;
    char *text = metrics_format(m, g, name, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

static void test_histogram_buckets(void **state)
{
    (void)state;
    metrics m;
    metrics_init(&m);
    metrics_observe(&m.ttft, 0.0005);
    metrics_observe(&m.ttft, 0.001); /* on a bound: counted in it (le) */
    metrics_observe(&m.ttft, 0.0011);
    metrics_observe(&m.ttft, 3000); /* past the last bound: +Inf only */
    assert_int_equal(m.ttft.count, 4);
    assert_int_equal(m.ttft.counts[0], 2);
    assert_int_equal(m.ttft.counts[1], 1);
    assert_int_equal(m.ttft.counts[m.ttft.n_bounds], 1);
    const metrics_gauges g = {0};
    char *text = format(&m, &g, "demo-model");
    expect_line(text, "vllm:time_to_first_token_seconds_bucket{model_name=\"demo-model\",le=\"0.001\"} 2");
    expect_line(text, "vllm:time_to_first_token_seconds_bucket{model_name=\"demo-model\",le=\"0.005\"} 3");
    expect_line(text, "vllm:time_to_first_token_seconds_bucket{model_name=\"demo-model\",le=\"2560\"} 3");
    expect_line(text, "vllm:time_to_first_token_seconds_bucket{model_name=\"demo-model\",le=\"+Inf\"} 4");
    expect_line(text, "vllm:time_to_first_token_seconds_count{model_name=\"demo-model\"} 4");
    expect_line(text, "vllm:inter_token_latency_seconds_count{model_name=\"demo-model\"} 0");
    expect_line(text, "vllm:e2e_request_latency_seconds_bucket{model_name=\"demo-model\",le=\"7680\"} 0");
    expect_line(text, "vllm:request_queue_time_seconds_sum{model_name=\"demo-model\"} 0");
    const char *sum = strstr(text, "vllm:time_to_first_token_seconds_sum{model_name=\"demo-model\"} ");
    assert_non_null(sum);
    assert_true(fabs(strtod(strchr(sum, '}') + 2, NULL) - 3000.0026) < 1e-9);
    free(text);
}

static void test_names_and_gauges(void **state)
{
    (void)state;
    metrics m;
    metrics_init(&m);
    metrics_count_finish(&m, FK_FINISH_EOS);
    metrics_count_finish(&m, FK_FINISH_STOP);
    metrics_count_finish(&m, FK_FINISH_LENGTH);
    metrics_count_finish(&m, FK_FINISH_CANCEL);
    metrics_count_finish(&m, FK_FINISH_ERROR);
    const metrics_gauges g = {
        .engine = {.running = 3, .waiting = 2, .blocks_total = 200, .blocks_used = 50, .blocks_free = 140,
                   .blocks_cached = 10, .prefix_query_tokens = 1000, .prefix_hit_tokens = 400, .preemptions = 5,
                   .prompt_tokens = 1234, .generation_tokens = 5678, .decode_steps = 90, .decode_launches = 270,
                   .prefill_steps = 7, .prefill_launches = 700},
        .pending = 4,
    };
    char *text = format(&m, &g, "m");
    expect_line(text, "vllm:num_requests_running{model_name=\"m\"} 3");
    expect_line(text, "vllm:num_requests_waiting{model_name=\"m\"} 6");
    expect_line(text, "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25");
    expect_line(text, "vllm:prompt_tokens_total{model_name=\"m\"} 1234");
    expect_line(text, "vllm:generation_tokens_total{model_name=\"m\"} 5678");
    expect_line(text, "vllm:num_preemptions_total{model_name=\"m\"} 5");
    expect_line(text, "vllm:prefix_cache_queries_total{model_name=\"m\"} 1000");
    expect_line(text, "vllm:prefix_cache_hits_total{model_name=\"m\"} 400");
    expect_line(text, "vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 2");
    expect_line(text, "vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 1");
    expect_line(text, "vllm:request_success_total{model_name=\"m\",finished_reason=\"abort\"} 1");
    expect_line(text, "vllm:request_success_total{model_name=\"m\",finished_reason=\"error\"} 1");
    expect_line(text, "flashkernel_kv_blocks{model_name=\"m\",state=\"used\"} 50");
    expect_line(text, "flashkernel_kv_blocks{model_name=\"m\",state=\"cached\"} 10");
    expect_line(text, "flashkernel_kv_blocks{model_name=\"m\",state=\"free\"} 140");
    expect_line(text, "flashkernel_engine_steps_total{model_name=\"m\",kind=\"decode\"} 90");
    expect_line(text, "flashkernel_engine_steps_total{model_name=\"m\",kind=\"prefill\"} 7");
    expect_line(text, "flashkernel_device_launches_total{model_name=\"m\",kind=\"decode\"} 270");
    expect_line(text, "flashkernel_device_launches_total{model_name=\"m\",kind=\"prefill\"} 700");
    expect_line(text, "# TYPE flashkernel_device_launches_total counter");
    expect_line(text, "# TYPE vllm:prompt_tokens_total counter");
    expect_line(text, "# TYPE vllm:kv_cache_usage_perc gauge");
    expect_line(text, "# TYPE vllm:e2e_request_latency_seconds histogram");
    free(text);
    /* No blocks at all: usage 0, not NaN. */
    const metrics_gauges empty = {0};
    text = format(&m, &empty, "m");
    expect_line(text, "vllm:kv_cache_usage_perc{model_name=\"m\"} 0");
    free(text);
}

static void test_label_escaping(void **state)
{
    (void)state;
    metrics m;
    metrics_init(&m);
    const metrics_gauges g = {0};
    char *text = format(&m, &g, "a\"b\\c\nd");
    expect_line(text, "vllm:num_requests_running{model_name=\"a\\\"b\\\\c\\nd\"} 0");
    free(text);
}

/* Every line is a comment or `name{labels} value`; a sample's family has had its # HELP and # TYPE. */
static void test_exposition_structure(void **state)
{
    (void)state;
    metrics m;
    metrics_init(&m);
    metrics_observe(&m.itl, 0.02);
    metrics_observe(&m.e2e, 1.5);
    const metrics_gauges g = {.engine = {.blocks_total = 10, .blocks_free = 10}};
    char *text = format(&m, &g, "demo-model");
    char family[256] = "";
    int samples = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "# HELP ", 7)) {
            sscanf(line + 7, "%255s", family);
            continue;
        }
        if (!strncmp(line, "# TYPE ", 7)) {
            char name[256], type[32];
            assert_int_equal(sscanf(line + 7, "%255s %31s", name, type), 2);
            assert_string_equal(name, family);
            continue;
        }
        const char *brace = strchr(line, '{'), *close = strchr(line, '}');
        assert_non_null(brace);
        assert_non_null(close);
        assert_int_equal(strncmp(line, family, strlen(family)), 0);
        assert_true(close[1] == ' ');
        char *end;
        const double v = strtod(close + 2, &end);
        assert_true(*end == '\0' && isfinite(v) && v >= 0);
        samples++;
    }
    assert_true(samples > 80);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histogram_buckets),
        cmocka_unit_test(test_names_and_gauges),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_exposition_structure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

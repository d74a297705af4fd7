/* dam_maintenance_test.c: merging maintenance windows and the mask over a job's frame. */
#include "dam/maintenance.h"
#include "harness.h"

static void test_merge_overlapping(void) {
    dam_window in[] = {{300, 400}, {100, 200}, {150, 250}, {240, 260}, {400, 500}};
    dam_window out[5];
    size_t merged = 99;
    size_t n = dam_windows_merge(in, 5, out, &merged);
    /* sorted: [100,200) [150,250) [240,260) [300,400) [400,500):
     * the first three overlap into [100,260); [300,400) and [400,500) only touch */
    CHECK_INT(n, 3);
    CHECK_INT(merged, 2);
    CHECK_NEAR(out[0].start_s, 100, 0);
    CHECK_NEAR(out[0].end_s, 260, 0);
    CHECK_NEAR(out[1].start_s, 300, 0);
    CHECK_NEAR(out[2].end_s, 500, 0);
}

static void test_contained_window(void) {
    dam_window in[] = {{100, 500}, {200, 300}};
    dam_window out[2];
    size_t merged;
    CHECK_INT(dam_windows_merge(in, 2, out, &merged), 1);
    CHECK_INT(merged, 1);
    CHECK_NEAR(out[0].end_s, 500, 0); /* not shortened to 300 */
}

static void test_hit(void) {
    dam_window w[] = {{100, 200}, {500, 600}};
    CHECK(dam_windows_hit(w, 2, 150, 160) == &w[0]); /* inside a window now */
    CHECK(dam_windows_hit(w, 2, 300, 501) == &w[1]); /* the job's end runs into one */
    CHECK(dam_windows_hit(w, 2, 300, 500) == NULL);  /* ends exactly when it starts */
    CHECK(dam_windows_hit(w, 2, 200, 300) == NULL);  /* starts when the first one ends */
    CHECK(dam_windows_hit(w, 2, 50, 700) == &w[0]);  /* spans both: the first is named */
    CHECK(dam_windows_hit(w, 0, 0, 1000) == NULL);
}

int main(void) {
    RUN(test_merge_overlapping);
    RUN(test_contained_window);
    RUN(test_hit);
    return TEST_SUMMARY();
}

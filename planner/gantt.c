/* gantt.c: the SVG Gantt chart of a Workflow's plan (gantt.h). Pure. */
#include "planner/gantt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "planner/kobj.h"

typedef struct buf {
    char *s;
    size_t len, cap;
    int oom;
} buf;

__attribute__((format(printf, 2, 3))) static void put(buf *b, const char *fmt, ...) {
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t nc = (b->cap + (size_t)n + 1) * 2;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
}

static void esc(buf *b, const char *s) {
    for (; *s; s++)
        switch (*s) {
        case '<':
            put(b, "&lt;");
            break;
        case '>':
            put(b, "&gt;");
            break;
        case '&':
            put(b, "&amp;");
            break;
        case '"':
            put(b, "&quot;");
            break;
        default:
            put(b, "%c", *s);
        }
}

static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};

#define LEFT  120
#define WIDTH 900
#define ROW   26
#define TOP   40

char *pl_gantt_svg(const pl_cluster *c, const pl_busy *busy, int nbusy, const pl_busy *resv,
                   int nresv, const json_t *wfobj, int64_t now) {
    buf b = {.s = malloc(4096), .cap = 4096};
    if (!b.s)
        return NULL;
    b.s[0] = 0;
    json_t *steps = tm_json_path(wfobj, "status.steps"), *ss;
    size_t i;
    /* The chart starts at the earlier of now and the first step's start (a finished plan is
     * drawn too); busy entries are offsets from now, shifted by off. */
    int64_t origin = now, horizon = 60;
    json_array_foreach(steps, i, ss) {
        int64_t s0 = pl_time_parse(tm_json_str(ss, "start", NULL));
        if (s0 >= 0 && s0 < origin)
            origin = s0;
    }
    int64_t off = now - origin;
    json_array_foreach(steps, i, ss) {
        int64_t e = pl_time_parse(tm_json_str(ss, "end", NULL));
        if (e - origin > horizon)
            horizon = e - origin;
    }
    for (int k = 0; k < nbusy; k++)
        if (busy[k].until_s + off > horizon && busy[k].until_s + off < 4 * horizon)
            horizon = busy[k].until_s + off;
    horizon += horizon / 10;
    double xs = (double)WIDTH / (double)horizon;
    int height = TOP + ROW * c->nnodes + 40;
    put(&b,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "font-family=\"sans-serif\" font-size=\"11\">\n"
        "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
        "stroke=\"#777\" stroke-width=\"2\"/></pattern></defs>\n"
        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" "
        "font-size=\"14\">workflow ",
        LEFT + WIDTH + 20, height);
    esc(&b, tm_json_str(wfobj, "metadata.name", "?"));
    put(&b, " (%s): plan over the cluster's occupancy; now at +%lld:%02lld</text>\n",
        tm_json_str(wfobj, "status.phase", "not planned"), (long long)(off / 60),
        (long long)(off % 60));
    for (int n = 0; n < c->nnodes; n++) {
        int y = TOP + n * ROW;
        put(&b, "<text x=\"10\" y=\"%d\">", y + 16);
        esc(&b, c->nodes[n].name);
        put(&b,
            "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#ddd\"/>\n",
            LEFT, y, WIDTH, ROW - 2);
    }
    for (int k = 0; k < nbusy; k++) {
        const pl_busy *e = &busy[k];
        double share = (double)e->cpu_milli / (double)(c->nodes[e->node].cpu_milli ?: 1);
        int h = (int)((ROW - 2) * (share > 1 ? 1 : share));
        put(&b,
            "<rect class=\"busy\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
            "fill=\"#bbb\" opacity=\"0.7\"/>\n",
            LEFT + (e->from_s + off) * xs, TOP + e->node * ROW + (ROW - 2 - h),
            (e->until_s - e->from_s) * xs, h < 1 ? 1 : h);
    }
    for (int k = 0; k < nresv; k++) {
        const pl_busy *e = &resv[k];
        put(&b,
            "<rect class=\"reservation\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
            "fill=\"url(#hatch)\" stroke=\"#777\"/>\n",
            LEFT + (e->from_s + off) * xs, TOP + e->node * ROW, (e->until_s - e->from_s) * xs,
            ROW - 2);
    }
    json_array_foreach(steps, i, ss) {
        int64_t st = pl_time_parse(tm_json_str(ss, "start", NULL)) - origin;
        int64_t en = pl_time_parse(tm_json_str(ss, "end", NULL)) - origin;
        if (st < 0 || en <= st)
            continue;
        json_t *nodes = json_object_get(ss, "nodes"), *nn;
        size_t k;
        json_array_foreach(nodes, k, nn) {
            int n = pl_cluster_find_node(c, json_string_value(nn));
            if (n < 0)
                continue;
            put(&b,
                "<rect class=\"step\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                "fill=\"%s\" opacity=\"0.85\"><title>",
                LEFT + st * xs, TOP + n * ROW + 3, (en - st) * xs, ROW - 8,
                colours[i % (sizeof colours / sizeof *colours)]);
            esc(&b, tm_json_str(ss, "name", ""));
            put(&b, " %s</title></rect><text x=\"%.1f\" y=\"%d\" fill=\"white\">",
                tm_json_str(ss, "state", ""), LEFT + st * xs + 3, TOP + n * ROW + 16);
            esc(&b, tm_json_str(ss, "name", ""));
            put(&b, "</text>\n");
        }
    }
    put(&b, "<line class=\"now\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"red\"/>\n",
        LEFT + off * xs, TOP - 4, LEFT + off * xs, TOP + c->nnodes * ROW);
    int y = TOP + c->nnodes * ROW + 16;
    for (int t = 0; t <= 10; t++) {
        int64_t s = horizon * t / 10;
        put(&b, "<text x=\"%.1f\" y=\"%d\">+%lld:%02lld</text>\n", LEFT + s * xs - 10, y,
            (long long)(s / 60), (long long)(s % 60));
    }
    put(&b, "</svg>\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

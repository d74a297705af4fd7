/* ilp.c: the model of ilp.h built for GLPK and solved with glp_intopt. */
#include "planner/ilp.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Coefficient triplets, 1-based as GLPK wants them. */
typedef struct trip {
    int n, cap;
    int *ia, *ja;
    double *ar;
} trip;

static int trip_add(trip *m, int row, int col, double v) {
    if (v == 0)
        return 0;
    if (m->n + 1 >= m->cap) {
        int cap = m->cap ? m->cap * 2 : 4096;
        int *ia = realloc(m->ia, (size_t)cap * sizeof *ia);
        if (ia)
            m->ia = ia;
        int *ja = realloc(m->ja, (size_t)cap * sizeof *ja);
        if (ja)
            m->ja = ja;
        double *ar = realloc(m->ar, (size_t)cap * sizeof *ar);
        if (ar)
            m->ar = ar;
        if (!ia || !ja || !ar)
            return -1;
        m->cap = cap;
    }
    m->n++;
    m->ia[m->n] = row;
    m->ja[m->n] = col;
    m->ar[m->n] = v;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int horizon_of(const pl_problem *p, const pl_plan *seed) {
    int last = pl_plan_last(seed);
    if (p->objective == PL_OBJ_END)
        return last;
    /* An optimal compact plan can always be moved to start by the release slot (the cluster is
     * empty from there), so one exists ending by release + the seed's makespan. */
    int h = p->release + last - pl_plan_first(seed);
    return h > last ? h : last;
}

long pl_ilp_estimate_cols(const pl_problem *p, const pl_plan *seed) {
    int H = horizon_of(p, seed);
    long cols = 2;
    int *ws = malloc((size_t)(p->ntypes ? p->ntypes : 1) * sizeof *ws);
    if (!ws)
        return 0;
    for (int i = 0; i < p->wf->nsteps; i++) {
        long win = H - p->tail[i] - p->head[i] + 1, fit = 0, starts = 0, span = 0;
        for (int n = 0; n < p->cl->nnodes; n++)
            fit += pl_step_node_cap(p, i, n) > 0;
        /* a walltime d longer than the shortest shrinks the start window by the difference */
        int nws = pl_step_walltimes(p, i, ws);
        for (int k = 0; k < nws; k++)
            if (win - (ws[k] - p->w[i]) > 0) {
                starts += win - (ws[k] - p->w[i]);
                span = win + p->w[i] - 1;
            }
        cols += starts + fit + fit * span;
    }
    free(ws);
    return cols;
}

typedef struct cb_ctx {
    const double *seedx;
    int seeded;
    double bound;
    int have_bound;
} cb_ctx;

static void callback(glp_tree *tree, void *info) {
    cb_ctx *c = info;
    if (glp_ios_reason(tree) == GLP_IHEUR && !c->seeded) {
        c->seeded = 1;
        glp_ios_heur_sol(tree, c->seedx);
    }
    int b = glp_ios_best_node(tree);
    if (b) {
        c->bound = glp_ios_node_bound(tree, b);
        c->have_bound = 1;
    }
}

typedef struct model {
    int H, nsteps, nnodes, ntypes;
    int *es, *ls; /* start window per step (for its shortest walltime) */
    int *nd;      /* candidate walltimes of step i */
    int *wd;      /* [i * ntypes + k]: the k-th walltime of step i, ascending */
    int *lsd;     /* [i * ntypes + k]: last start with that walltime (< es: none) */
    int *scol;    /* [i * ntypes + k]: first s column of step i with walltime k */
    int *hi;      /* last slot step i can run in, + 1 */
    int *xcol;    /* [i * nnodes + n], 0 when a pod does not fit */
    int *cap;     /* [i * nnodes + n] */
    int colT, colt, ncols;
} model;

typedef struct qref {
    int col, i, n, u;
} qref;

static void model_free(model *m) {
    free(m->es);
    free(m->ls);
    free(m->nd);
    free(m->wd);
    free(m->lsd);
    free(m->hi);
    free(m->scol);
    free(m->xcol);
    free(m->cap);
}

int pl_ilp_solve(const pl_problem *p, const pl_plan *seed, double time_limit_s, long max_cols,
                 pl_plan *out, pl_ilp_result *res, tm_err *err) {
    double t0 = now_s();
    memset(res, 0, sizeof *res);
    res->bound = -1;
    res->status = PL_ILP_NONE;
    long est = pl_ilp_estimate_cols(p, seed);
    res->cols = est;
    res->horizon = horizon_of(p, seed);
    if (max_cols > 0 && est > max_cols) {
        res->status = PL_ILP_TOO_LARGE;
        return 0;
    }
    const int S = p->wf->nsteps, N = p->cl->nnodes, H = res->horizon;
    const int NT = p->ntypes ? p->ntypes : 1;
    model m = {.H = H, .nsteps = S, .nnodes = N, .ntypes = NT};
    trip a = {0};
    glp_prob *lp = NULL;
    double *seedx = NULL;
    qref *qinfo = NULL; /* which (step, node, slot) each q column stands for */
    int nq = 0, qcap = 0;
    int rc = -1;
    m.es = calloc((size_t)S, sizeof *m.es);
    m.ls = calloc((size_t)S, sizeof *m.ls);
    m.scol = calloc((size_t)S * (size_t)NT, sizeof *m.scol);
    m.nd = calloc((size_t)S, sizeof *m.nd);
    m.wd = calloc((size_t)S * (size_t)NT, sizeof *m.wd);
    m.lsd = calloc((size_t)S * (size_t)NT, sizeof *m.lsd);
    m.hi = calloc((size_t)S, sizeof *m.hi);
    m.xcol = calloc((size_t)S * (size_t)N, sizeof *m.xcol);
    m.cap = calloc((size_t)S * (size_t)N, sizeof *m.cap);
    if (!m.es || !m.ls || !m.scol || !m.xcol || !m.cap || !m.nd || !m.wd || !m.lsd || !m.hi)
        goto oom;
    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    double eps = 1.0 / (4.0 * (H + 1));
    int col = 0, row = 0;
    /* s[i,d,t]: step i starts in slot t and lasts d slots (d one of its groups' walltimes;
     * with one walltime this is WARP's s[i,t]) */
    for (int i = 0; i < S; i++) {
        m.es[i] = p->head[i];
        m.ls[i] = H - p->tail[i];
        m.nd[i] = pl_step_walltimes(p, i, m.wd + (size_t)i * NT);
        m.hi[i] = m.es[i];
        for (int k = 0; k < m.nd[i]; k++) {
            size_t ik = (size_t)i * NT + k;
            /* tail[i] counts the shortest walltime w_i: a longer d must start d - w_i earlier */
            m.lsd[ik] = m.ls[i] - (m.wd[ik] - p->w[i]);
            int win = m.lsd[ik] - m.es[i] + 1;
            if (win <= 0)
                continue;
            if (m.lsd[ik] + m.wd[ik] > m.hi[i])
                m.hi[i] = m.lsd[ik] + m.wd[ik];
            m.scol[ik] = col + 1;
            glp_add_cols(lp, win);
            for (int t = 0; t < win; t++)
                glp_set_col_kind(lp, ++col, GLP_BV);
        }
        for (int n = 0; n < N; n++) {
            int c = pl_step_node_cap(p, i, n);
            m.cap[(size_t)i * N + n] = c;
            if (c > 0) {
                glp_add_cols(lp, 1);
                m.xcol[(size_t)i * N + n] = ++col;
                glp_set_col_kind(lp, col, GLP_IV);
                glp_set_col_bnds(lp, col, GLP_DB, 0, c);
            }
        }
    }
    glp_add_cols(lp, 2);
    m.colT = ++col;
    m.colt = ++col;
    glp_set_col_bnds(lp, m.colT, GLP_DB, 0, H);
    glp_set_col_bnds(lp, m.colt, GLP_DB, 0, H);
    if (p->objective == PL_OBJ_MAKESPAN) {
        glp_set_obj_coef(lp, m.colT, 1 + eps);
        glp_set_obj_coef(lp, m.colt, -1);
    } else {
        glp_set_obj_coef(lp, m.colT, 1 + eps);
        glp_set_obj_coef(lp, m.colt, -eps);
    }
    /* each step starts once; its gang is placed; T and t */
    for (int i = 0; i < S; i++) {
        glp_add_rows(lp, 4);
        int r1 = ++row, r2 = ++row, r3 = ++row, r4 = ++row;
        glp_set_row_bnds(lp, r1, GLP_FX, 1, 1);
        glp_set_row_bnds(lp, r2, GLP_FX, p->wf->steps[i].pods, p->wf->steps[i].pods);
        glp_set_row_bnds(lp, r3, GLP_LO, p->w[i], 0); /* T - E_i >= 0, E_i = S_i + d */
        glp_set_row_bnds(lp, r4, GLP_UP, 0, 0);       /* t - S_i <= 0 */
        for (int k = 0; k < m.nd[i]; k++) {
            size_t ik = (size_t)i * NT + k;
            for (int t = m.es[i]; t <= m.lsd[ik]; t++) {
                int c = m.scol[ik] + t - m.es[i];
                if (trip_add(&a, r1, c, 1) < 0 ||
                    trip_add(&a, r3, c, -(t + m.wd[ik] - p->w[i])) < 0 ||
                    trip_add(&a, r4, c, -t) < 0)
                    goto oom;
            }
        }
        for (int n = 0; n < N; n++)
            if (m.xcol[(size_t)i * N + n] && trip_add(&a, r2, m.xcol[(size_t)i * N + n], 1) < 0)
                goto oom;
        if (trip_add(&a, r3, m.colT, 1) < 0 || trip_add(&a, r4, m.colt, 1) < 0)
            goto oom;
        /* a pod on a group slower than d rules d out: x[i,n] <= c * (starts with d >= w_n) */
        for (int n = 0; n < N && m.nd[i] > 1; n++) {
            int xc = m.xcol[(size_t)i * N + n], wn = pl_step_slots(p, i, p->cl->nodes[n].type);
            if (!xc || wn <= m.wd[(size_t)i * NT])
                continue;
            glp_add_rows(lp, 1);
            glp_set_row_bnds(lp, ++row, GLP_UP, 0, 0);
            if (trip_add(&a, row, xc, 1) < 0)
                goto oom;
            for (int k = 0; k < m.nd[i]; k++) {
                size_t ik = (size_t)i * NT + k;
                for (int t = m.es[i]; m.wd[ik] >= wn && t <= m.lsd[ik]; t++)
                    if (trip_add(&a, row, m.scol[ik] + t - m.es[i], -m.cap[(size_t)i * N + n]) < 0)
                        goto oom;
            }
        }
    }
    /* dependencies (1e): S_k - S_i >= w_i */
    for (int k = 0; k < S; k++)
        for (int j = 0; j < p->wf->steps[k].nafter; j++) {
            int i = p->wf->steps[k].after[j];
            glp_add_rows(lp, 1);
            glp_set_row_bnds(lp, ++row, GLP_LO, p->w[i], 0); /* S_k - E_i >= 0 */
            for (int d = 0; d < m.nd[k]; d++) {
                size_t kd = (size_t)k * NT + d;
                for (int t = m.es[k]; t <= m.lsd[kd]; t++)
                    if (trip_add(&a, row, m.scol[kd] + t - m.es[k], t) < 0)
                        goto oom;
            }
            for (int d = 0; d < m.nd[i]; d++) {
                size_t id = (size_t)i * NT + d;
                for (int t = m.es[i]; t <= m.lsd[id]; t++)
                    if (trip_add(&a, row, m.scol[id] + t - m.es[i], -(t + m.wd[id] - p->w[i])) < 0)
                        goto oom;
            }
        }
    /* capacity (1h) per node and slot, where it can bind */
    for (int n = 0; n < N; n++) {
        for (int u = 0; u < H; u++) {
            pl_cell free_ = pl_occ_get(&p->base, n, u);
            /* Rows in fractions of the node: KiB next to 0/1 starts made the simplex fail. */
            pl_cell full = p->base.full[n];
            double dcpu = 0, dmem = 0;
            for (int i = 0; i < S; i++) {
                int c = m.cap[(size_t)i * N + n];
                if (c > 0 && u >= m.es[i] && u < m.hi[i]) {
                    dcpu += (double)p->cpu[i] * c;
                    dmem += (double)p->mem[i] * c;
                }
            }
            int need_cpu = dcpu > free_.cpu, need_mem = dmem > free_.mem;
            if (!need_cpu && !need_mem)
                continue;
            int rcpu = 0, rmem = 0;
            if (need_cpu) {
                glp_add_rows(lp, 1);
                rcpu = ++row;
                glp_set_row_bnds(lp, rcpu, GLP_UP, 0, (double)free_.cpu / full.cpu);
            }
            if (need_mem) {
                glp_add_rows(lp, 1);
                rmem = ++row;
                glp_set_row_bnds(lp, rmem, GLP_UP, 0, (double)free_.mem / full.mem);
            }
            for (int i = 0; i < S; i++) {
                int c = m.cap[(size_t)i * N + n];
                if (!(c > 0 && u >= m.es[i] && u < m.hi[i]))
                    continue;
                /* q >= x - c (1 - running): q - x - c * sum s[i, t in (u - w, u]] >= -c */
                glp_add_cols(lp, 1);
                int q = ++col;
                glp_set_col_bnds(lp, q, GLP_DB, 0, c);
                if (nq == qcap) {
                    qcap = qcap ? qcap * 2 : 1024;
                    qref *grown = realloc(qinfo, (size_t)qcap * sizeof *qinfo);
                    if (!grown)
                        goto oom;
                    qinfo = grown;
                }
                qinfo[nq++] = (qref){q, i, n, u};
                glp_add_rows(lp, 1);
                int rl = ++row;
                glp_set_row_bnds(lp, rl, GLP_LO, -c, 0);
                if (trip_add(&a, rl, q, 1) < 0 ||
                    trip_add(&a, rl, m.xcol[(size_t)i * N + n], -1) < 0)
                    goto oom;
                /* running in u: started in (u - d, u] with walltime d */
                for (int d = 0; d < m.nd[i]; d++) {
                    size_t id = (size_t)i * NT + d;
                    int lo = u - m.wd[id] + 1 > m.es[i] ? u - m.wd[id] + 1 : m.es[i];
                    int hi = u < m.lsd[id] ? u : m.lsd[id];
                    for (int t = lo; t <= hi; t++)
                        if (trip_add(&a, rl, m.scol[id] + t - m.es[i], -c) < 0)
                            goto oom;
                }
                if ((rcpu && trip_add(&a, rcpu, q, (double)p->cpu[i] / full.cpu) < 0) ||
                    (rmem && trip_add(&a, rmem, q, (double)p->mem[i] / full.mem) < 0))
                    goto oom;
            }
        }
    }
    m.ncols = col;
    res->cols = col;
    res->rows = row;
    glp_load_matrix(lp, a.n, a.ia, a.ja, a.ar);
    /* The seed as a full solution vector: GLPK checks it and keeps it as the incumbent. */
    if (!(seedx = calloc((size_t)col + 1, sizeof *seedx)))
        goto oom;
    int seed_ok = 1, *seedk = calloc((size_t)S, sizeof *seedk);
    if (!seedk)
        goto oom;
    for (int i = 0; i < S; i++) {
        seedk[i] = -1;
        for (int k = 0; k < m.nd[i]; k++)
            if (m.wd[(size_t)i * NT + k] == seed->end[i] - seed->start[i])
                seedk[i] = k;
        seed_ok &= seedk[i] >= 0 && seed->start[i] >= m.es[i] &&
                   seed->start[i] <= m.lsd[(size_t)i * NT + (seedk[i] < 0 ? 0 : seedk[i])];
    }
    for (int i = 0; i < S && seed_ok; i++) {
        seedx[m.scol[(size_t)i * NT + seedk[i]] + seed->start[i] - m.es[i]] = 1;
        for (int k = seed->off[i]; k < seed->off[i + 1]; k++)
            seedx[m.xcol[(size_t)i * N + seed->node[k]]] += 1;
    }
    seedx[m.colT] = pl_plan_last(seed);
    seedx[m.colt] = pl_plan_first(seed);
    for (int k = 0; k < nq; k++) {
        int i = qinfo[k].i, u = qinfo[k].u;
        if (seed->start[i] <= u && u < seed->end[i])
            seedx[qinfo[k].col] = seedx[m.xcol[(size_t)i * N + qinfo[k].n]];
    }
    free(seedk);
    /* glp_adv_basis prints "Constructing initial basis..." whatever msg_lev says */
    int term_was = glp_term_out(GLP_OFF);
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp smcp;
    glp_init_smcp(&smcp);
    smcp.msg_lev = GLP_MSG_OFF;
    double left_ms = time_limit_s * 1000 - (now_s() - t0) * 1000;
    smcp.tm_lim = left_ms > 1 ? (int)left_ms : 1;
    int lr = glp_simplex(lp, &smcp);
    if (lr != 0 || glp_get_status(lp) != GLP_OPT) {
        glp_term_out(term_was);
        res->status = PL_ILP_NONE;
        rc = 0;
        goto done;
    }
    /* the seed lies in every window by the horizon's construction; never index outside one */
    cb_ctx cb = {seedx, !seed_ok, 0, 0};
    glp_iocp iocp;
    glp_init_iocp(&iocp);
    iocp.msg_lev = GLP_MSG_OFF;
    iocp.cb_func = callback;
    iocp.cb_info = &cb;
    iocp.mir_cuts = GLP_ON;
    left_ms = time_limit_s * 1000 - (now_s() - t0) * 1000;
    iocp.tm_lim = left_ms > 1 ? (int)left_ms : 1;
    int ir = glp_intopt(lp, &iocp);
    glp_term_out(term_was);
    int st = glp_mip_status(lp);
    if (st != GLP_OPT && st != GLP_FEAS) {
        res->status = PL_ILP_NONE;
        rc = 0;
        goto done;
    }
    res->status = (ir == 0 && st == GLP_OPT) ? PL_ILP_OPTIMAL : PL_ILP_FEASIBLE;
    for (int i = 0; i < S; i++) {
        int start = -1;
        for (int d = 0; d < m.nd[i]; d++) {
            size_t id = (size_t)i * NT + d;
            for (int t = m.es[i]; t <= m.lsd[id]; t++)
                if (glp_mip_col_val(lp, m.scol[id] + t - m.es[i]) > 0.5)
                    start = t;
        }
        out->start[i] = start;
        int k = out->off[i];
        for (int n = 0; n < N; n++) {
            int xc = m.xcol[(size_t)i * N + n];
            int cnt = xc ? (int)lround(glp_mip_col_val(lp, xc)) : 0;
            for (int j = 0; j < cnt && k < out->off[i + 1]; j++)
                out->node[k++] = n;
        }
        /* the step lasts its slowest placed group's walltime: at most the chosen d (a longer d
         * the solver picked at no cost only ends the step earlier, which keeps the plan valid) */
        out->end[i] = start + pl_step_slots_on(p, i, out->node + out->off[i], k - out->off[i]);
    }
    double obj = pl_plan_score(p, out);
    if (res->status == PL_ILP_OPTIMAL)
        res->bound = (int)floor(obj + 1e-9);
    else if (cb.have_bound)
        res->bound = (int)ceil(cb.bound - eps * H - 1e-6);
    rc = 0;
    goto done;
oom:
    tm_err_set(err, "ILP: out of memory building the model");
done:
    if (lp)
        glp_delete_prob(lp);
    free(a.ia);
    free(a.ja);
    free(a.ar);
    free(seedx);
    free(qinfo);
    model_free(&m);
    res->seconds = now_s() - t0;
    return rc;
}

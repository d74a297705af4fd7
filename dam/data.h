/* data.h: what the DAM knows of time and data apart from the clusters: maintenance windows,
 * datasets and transfer speeds. The ranking (rank.h), its scores (scores.h) and the maintenance
 * mask (maintenance.h) all read them, so they sit below all three. */
#ifndef TAREMA_DAM_DATA_H
#define TAREMA_DAM_DATA_H

/* A maintenance window [start_s, end_s) in seconds since the epoch. */
typedef struct dam_window {
    double start_s, end_s;
} dam_window;

/* A dataset of the registry: where it lies and how big it is. */
typedef struct dam_dataset {
    const char *name, *location, *site;
    double size_bytes;
} dam_dataset;

/* A measured or configured transfer speed from one location to another (directed). */
typedef struct dam_transfer {
    const char *from, *to;
    double bytes_per_s;
} dam_transfer;

#endif

/* malloc_tune.h: process-wide allocator settings for the long-running components. */
#ifndef TAREMA_MALLOC_TUNE_H
#define TAREMA_MALLOC_TUNE_H

/* Call once at the start of main, before other threads exist. */
void tm_malloc_tune(void);

#endif

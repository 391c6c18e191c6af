/*
 * decl.h - settings declared in sluice.conf: levels, the sink, pools and
 * tag patterns, in the CLI's syntax, applied at start and on SIGHUP; and
 * the running settings written back in that syntax (settings.export).
 */
#ifndef SLUICE_DECL_H
#define SLUICE_DECL_H

#include <stddef.h>

#include "proto.h"

struct bk;
struct conf;
typedef struct decl_list decl_list;

/* decl_read reads the declarations of the config file at path ([level
 * NAME], [pool NAME], [tag PATTERN] sections, and the sink's limits in
 * [sink]) into *out (an empty list when path is NULL or ""), naming levels
 * as cfg does (the running broker's). Returns SL_OK; SL_EINVAL
 * with "path:line: ..." in err for an unknown section or key, a bad value
 * or an unknown level; SL_ENOTFOUND when the file cannot be read; SL_ENOMEM.
 * The list is freed with decl_free (accepts NULL and *list NULL). */
int decl_read(const struct conf *cfg, const char *path, decl_list **out, char *err, size_t errlen);
void decl_free(decl_list **list);

/* decl_apply makes b's settings what list declares: for each object, the
 * keys whose value differs from the running one go through the admin
 * commands the CLI sends (level.set, sink.set, pool.resize, tag.set, ...),
 * so they are checked, applied at once, stored with the pass and logged;
 * a pool or pattern that does not exist is made. A command refused (a fair
 * level holding messages, say) is logged with the file and line, and the
 * rest goes on. Returns how many commands were refused. Only when no
 * commit is out (at start, before the loop; on SIGHUP, from reload.c). */
unsigned decl_apply(struct bk *b, const decl_list *list);

/* decl_export runs settings.export: the running settings of the sink, every
 * level, the pools an operator configured and the tag patterns (in their
 * order) and paused tags, as declarations, into rep's body (valid until the
 * next call). Returns SL_OK, or SL_ENOMEM with a sentence in text. */
int decl_export(struct bk *b, proto_msg *rep, char *text, size_t text_len);

#endif /* SLUICE_DECL_H */

/*
 * cli_keygen.c - `sluice keygen NAME [--force] [--json]`.
 *
 * Writes a new CURVE key pair (sl_keygen, Z85) into the current directory:
 * NAME.key holds the public and the secret key and is created with mode
 * 0600 (it is a password: give it to the one program that is NAME); NAME.pub
 * holds only the public key (give it to the broker's auth file, or, for the
 * broker's own pair, to clients as --server-key). Existing files are never
 * overwritten without --force, since losing a secret key locks its owner
 * out. No broker is involved; the files are a few lines each.
 */
#include "cli_keygen.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_text.h"

/* `sluice keygen --help`; the layout is cli_core.h's */
const cli_core_help cli_keygen_help = {
    .summary = "write a new CURVE key pair",
    .body =
        "  sluice keygen NAME [--force] [--json]\n"
        "      Write a new CURVE key pair here: NAME.key (public and secret keys,\n"
        "      mode 0600; for sluiced --curve-secret or sluice --client-key) and\n"
        "      NAME.pub (the public key; for the broker's --auth file, or\n"
        "      --server-key). Refuses to replace existing files unless --force.\n"
        "      --force              replace NAME.key and NAME.pub when they exist\n"
        "      --json               print the files and the public key as JSON\n",
    .examples =
        "  sluice keygen worker1                        worker1.key and worker1.pub\n",
};

enum { OPT_FORCE = 256, OPT_JSON };

/* write_file writes text to path with mode, refusing an existing file
 * unless force. Returns 0, or errno. */
static int write_file(const char *path, const char *text, mode_t mode, bool force)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), mode);
    if (fd < 0)
        return errno;
    size_t len = strlen(text);
    int e = write(fd, text, len) == (ssize_t)len && fchmod(fd, mode) == 0 && fsync(fd) == 0 ? 0 : errno;
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

int cli_keygen_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, OPT_FORCE},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool force = false, json = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_FORCE: force = true; break;
        case OPT_JSON: json = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind >= argc)
        return cli_text_usage_error(cmd, "give the key's NAME (writes NAME.key and NAME.pub here)");
    if (optind + 1 < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    const char *name = argv[optind];
    if (!name[0] || strlen(name) > 64 || strpbrk(name, "/ \t#"))
        return cli_text_usage_error(cmd, "bad NAME '%s' (1..64 characters, no '/', spaces or '#')", name);

    char pub[SL_KEY_BYTES], sec[SL_KEY_BYTES], key_path[80], pub_path[80], key_text[400], pub_text[300];
    if (sl_keygen(pub, sec) != SL_OK) {
        cli_text_say(cmd, "this ZeroMQ library has no CURVE support");
        return CLI_TEXT_EXIT_FAILURE;
    }
    snprintf(key_path, sizeof key_path, "%s.key", name);
    snprintf(pub_path, sizeof pub_path, "%s.pub", name);
    snprintf(key_text, sizeof key_text,
             "# Sluice CURVE key pair of \"%s\": keep this file secret.\n"
             "# sluiced --curve-secret %s (the broker's own), or sluice --key %s (a client's).\n"
             "public = %s\nsecret = %s\n",
             name, key_path, key_path, pub, sec);
    snprintf(pub_text, sizeof pub_text,
             "# Sluice CURVE public key of \"%s\": an auth file line is \"%s ROLE %s\";\n"
             "# a broker's .pub file is what clients give as --server-key.\n"
             "public = %s\n",
             name, name, pub, pub);
    int e = write_file(key_path, key_text, 0600, force);
    if (e) {
        cli_text_say(cmd, "cannot write %s: %s%s", key_path, strerror(e),
                     e == EEXIST ? " (give --force to replace it)" : "");
        return CLI_TEXT_EXIT_FAILURE;
    }
    if ((e = write_file(pub_path, pub_text, 0644, force))) {
        cli_text_say(cmd, "cannot write %s: %s%s", pub_path, strerror(e),
                     e == EEXIST ? " (give --force to replace it)" : "");
        unlink(key_path);
        return CLI_TEXT_EXIT_FAILURE;
    }
    if (json) {
        printf("{\"name\":");
        cli_text_json_string(name);
        printf(",\"public\":\"%s\",\"key_file\":", pub);
        cli_text_json_string(key_path);
        printf(",\"pub_file\":");
        cli_text_json_string(pub_path);
        printf("}\n");
    } else {
        printf("wrote %s (secret, mode 0600) and %s\npublic key: %s\n", key_path, pub_path, pub);
    }
    return cli_core_output_done(cmd);
}

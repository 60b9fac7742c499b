/* presets.h: the ready-made question sets of `laya --preset` (see presets.c). */
#ifndef LAYA_CLI_PRESETS_H
#define LAYA_CLI_PRESETS_H

typedef struct cli_preset {
  const char *name;      /* email, guard, moderation, router, triage */
  const char *state_key; /* the state field the instructions read */
  const char *questions; /* JSON object: question id -> definition */
} cli_preset;

const cli_preset *cli_preset_find(const char *name);
const cli_preset *cli_preset_at(int i); /* in sorted name order; NULL past the end */

#endif

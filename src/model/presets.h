/* presets.h: the ready-made question sets of `laya --preset` and laya-mcp's `laya_preset` (see
 * presets.c). Data, in model/ so that both front ends (cli/, serve/) may include it. */
#ifndef LAYA_MODEL_PRESETS_H
#define LAYA_MODEL_PRESETS_H

typedef struct question_preset {
  const char *name;      /* email, guard, moderation, router, triage */
  const char *state_key; /* the state field the instructions read */
  const char *questions; /* JSON object: question id -> definition */
} question_preset;

const question_preset *question_preset_find(const char *name);
const question_preset *question_preset_at(int i); /* in sorted name order; NULL past the end */

#endif

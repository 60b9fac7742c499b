/*
 * lang.h: script and language detection for routing, with the rules of Laya 0.4.15's lang.py.
 *
 * Routing needs one bit: can the English checkpoint read this state? Script decides most of it
 * (exactly); for Latin text a function-word and diacritic heuristic decides whether it is
 * English, undecided, or another language. Structured states are also read line by line and
 * field by field, so a foreign message inside an English form is not outvoted.
 */
#ifndef LAYA_ROUTER_LANG_H
#define LAYA_ROUTER_LANG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/json.h"
#include "core/strbuf.h"

#define LANG_MAX_SCRIPTS 28

typedef struct lang_detection {
  const char *script;        /* "latin", "han", ..., "other", "unknown" (static strings) */
  int nprofile;              /* script_profile entries, Latin first, zeros omitted */
  const char *profile_name[LANG_MAX_SCRIPTS];
  double profile_value[LANG_MAX_SCRIPTS];
  const char *language;      /* "en", "fr", ... or NULL */
  bool is_english;
  bool language_undecided;
  double diacritic_rate;     /* rounded to 4 places */
  double non_latin_fraction; /* rounded to 4 places */
  char *mixed_segment;       /* UTF-8, malloc'd, or NULL */
} lang_detection;

/* Analyse a state (a parsed JSON value: string, object, array, or NULL for None). */
void lang_analyse(const json_value *state, lang_detection *out);
/* Analyse one string of UTF-8 text (a state that is a plain str). */
void lang_analyse_text(const char *utf8, size_t n, lang_detection *out);
void lang_detection_free(lang_detection *d);
/* detect_script(text): the dominant script of all of the text's letters (not only the 4,000
 * code points analyse reads), "unknown" without letters; a static string. */
const char *lang_detect_script(const char *utf8, size_t n);

/* Why the detection came out as it did (Laya's analyse(explain=True) "diagnostic"): the stage
 * (whole_state, segment, value), its reason, and for a segment or value the leaf index, the
 * path of keys and indices to it, and the 1-based line. */
typedef struct lang_diag {
  const char *stage, *reason;
  bool has_source;
  size_t leaf_index, line;
  char *path; /* inner JSON list text ("\"a\", 0"), or NULL for None */
} lang_diag;
void lang_analyse_explain(const json_value *state, lang_detection *out, lang_diag *diag);
void lang_diag_free(lang_diag *g);
void lang_detection_json_explain(strbuf *sb, const lang_detection *d, const lang_diag *g);

/* The detection as json.dumps writes Laya's dict (default separators, ensure_ascii=False). */
void lang_detection_json(strbuf *sb, const lang_detection *d);

#endif

/*
 * tchar.h -- byte classes for HTTP syntax: token characters (field names,
 * methods), field-value bytes and request-target bytes, in one table.
 */
#ifndef INGRESSD_TCHAR_H
#define INGRESSD_TCHAR_H

#define TCHAR_TOKEN	0x01	/* tchar: "!#$%&'*+-.^_`|~", DIGIT, ALPHA */
#define TCHAR_VALUE	0x02	/* field-vchar, SP, HTAB, obs-text */
#define TCHAR_TARGET	0x04	/* VCHAR but '#' */

extern const unsigned char tchar_class[256];

static inline int
tchar_is(unsigned char c)
{
	return (tchar_class[c] & TCHAR_TOKEN) != 0;
}

static inline int
tchar_is_ows(char c)
{
	return c == ' ' || c == '\t';
}

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How many hosts an MPI job's ranks run on, by processor name: the MPI
 * checks use it to prove that a run meant to span hosts does.
 */
#ifndef NRMA_MPI_HOSTS_H
#define NRMA_MPI_HOSTS_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* Collective over MPI_COMM_WORLD. */
static inline int nrma_mpi_count_hosts(void)
{
	char me[MPI_MAX_PROCESSOR_NAME] = { 0 };
	int nranks, len, hosts = 0;
	char *names;

	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	names = calloc((size_t) nranks, MPI_MAX_PROCESSOR_NAME);
	if (!names)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Get_processor_name(me, &len);
	MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
		      MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
	for (int r = 0; r < nranks; r++) {
		int first = 1;

		for (int q = 0; q < r && first; q++)
			first = strcmp(&names[r * MPI_MAX_PROCESSOR_NAME],
				       &names[q * MPI_MAX_PROCESSOR_NAME]) != 0;
		hosts += first;
	}
	free(names);
	return hosts;
}

#endif /* NRMA_MPI_HOSTS_H */

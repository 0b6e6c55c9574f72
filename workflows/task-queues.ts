/** Task queues of the controller. Plain code: imported by workflow code and by the controller process alike. */

/** Long waits inside one activity (registration, gates, drainage) poll their own task queue beside the main one. */
export const waitsTaskQueue = (taskQueue: string) => `${taskQueue}-waits`;
